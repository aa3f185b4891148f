/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/kubectlplugin"
)

// codesDir holds a page per finding code of kubectl meshinit, and an index.
const codesDir = "docs/codes"

// TestCodePagesAreCurrent: docs/codes holds exactly one page per code
// kubectlplugin.Codes documents, as codePage writes it, and README.md, the
// index; -update rewrites them. A code whose documentation is removed from
// the source leaves a page behind, which fails here: delete it (codes are
// never reused).
func TestCodePagesAreCurrent(t *testing.T) {
	codes := kubectlplugin.Codes()
	want := map[string]bool{"README.md": true}
	wellFormed := regexp.MustCompile(`^MI1[0-3][0-9]{2}$`)
	for _, c := range codes {
		if !wellFormed.MatchString(string(c.Code)) {
			t.Errorf("code %q: want MI1 and three digits, the second naming its area", c.Code)
		}
		if want[string(c.Code)+".md"] {
			t.Errorf("code %s documented twice", c.Code)
		}
		want[string(c.Code)+".md"] = true
		if c.Title == "" || c.Checks == "" || c.Reason == "" || c.Fix == "" || len(c.Commands) == 0 {
			t.Errorf("code %s: its title, checks, reason, fix and commands must all be said", c.Code)
		}
		testkit.Golden(t, filepath.Join(root, codesDir, string(c.Code)+".md"), []byte(codePage(c)))
	}
	testkit.Golden(t, filepath.Join(root, codesDir, "README.md"), []byte(codeIndex(codes)))
	entries, err := os.ReadDir(filepath.Join(root, codesDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s/%s documents no code of kubectlplugin.Codes: remove it", codesDir, e.Name())
		}
	}
}

const generatedNote = "<!-- generated from kubectlplugin/codes.go by hack/docs (make generate): do not edit -->\n"

// codePage is the page of one code.
func codePage(c kubectlplugin.CodeDoc) string {
	var b strings.Builder
	b.WriteString(generatedNote)
	fmt.Fprintf(&b, "# %s: %s\n\n", c.Code, c.Title)
	fmt.Fprintf(&b, "Area: %s. Reported by %s.\n\n", c.Area, commandList(c.Commands))
	fmt.Fprintf(&b, "## What is checked\n\n%s\n\n", c.Checks)
	fmt.Fprintf(&b, "## When it is not ok\n\n%s\n\n", c.Reason)
	fmt.Fprintf(&b, "## Fix\n\n%s The finding's own fix names the command for the object it found.\n\n", c.Fix)
	b.WriteString("[All codes](README.md) · [Operations](../operations.md)\n")
	return b.String()
}

func commandList(commands []string) string {
	var out []string
	for _, c := range commands {
		out = append(out, "`kubectl meshinit "+c+"`")
	}
	return strings.Join(out, ", ")
}

// codeIndex is docs/codes/README.md: every code by area.
func codeIndex(codes []kubectlplugin.CodeDoc) string {
	var b strings.Builder
	b.WriteString(generatedNote)
	b.WriteString("# Finding codes\n\n")
	b.WriteString("Every finding of `kubectl meshinit` carries a stable code (`-o json`: `code`), one page each.\n")
	b.WriteString("MI10xx: the control plane; MI11xx: the data plane; MI12xx: before installing; MI13xx: versions.\n")
	area := kubectlplugin.Area("")
	for _, c := range codes {
		if c.Area != area {
			area = c.Area
			fmt.Fprintf(&b, "\n## %s\n\n| code | what | not ok when |\n| --- | --- | --- |\n", strings.ToUpper(string(area[:1]))+string(area[1:]))
		}
		fmt.Fprintf(&b, "| [%s](%s.md) | %s | %s |\n", c.Code, c.Code, c.Title, strings.ReplaceAll(c.Reason, "|", `\|`))
	}
	return b.String()
}
