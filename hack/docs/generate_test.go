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
	"strings"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
)

// The repository's root, from this package's directory.
var root = filepath.Join("..", "..")

// generated are the files, or the parts of files, written from their
// sources of truth. TestGeneratedFilesAreCurrent fails when one is stale;
// `make generate` (this test with -update) rewrites them.
var generated = []struct {
	path     string
	generate func(old string) (string, error)
}{
	{"docs/configuration.md", func(old string) (string, error) {
		values, err := os.ReadFile(filepath.Join(root, "charts/meshinit/values.yaml"))
		if err != nil {
			return "", err
		}
		schema, err := os.ReadFile(filepath.Join(root, "charts/meshinit/values.schema.json"))
		if err != nil {
			return "", err
		}
		body, err := valuesReference(values, schema)
		if err != nil {
			return "", err
		}
		return replaceBetween(old, "<!-- chart values: generated", "<!-- end of chart values", body)
	}},
	{"docs/redirectpolicy-reference.md", func(string) (string, error) {
		const source = "charts/meshinit/crds/meshinit.io_redirectpolicies.yaml"
		manifest, err := os.ReadFile(filepath.Join(root, source))
		if err != nil {
			return "", err
		}
		return crdReference(source, manifest)
	}},
}

func TestGeneratedFilesAreCurrent(t *testing.T) {
	for _, f := range generated {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			path := filepath.Join(root, f.path)
			old, err := os.ReadFile(path)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			current, err := f.generate(string(old))
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			testkit.Golden(t, path, []byte(current))
		})
	}
}

// replaceBetween replaces the lines strictly between the line holding begin
// and the next line holding end with body.
func replaceBetween(doc, begin, end string, body []string) (string, error) {
	lines := strings.Split(doc, "\n")
	for b, l := range lines {
		if !strings.Contains(l, begin) {
			continue
		}
		for e := b + 1; e < len(lines); e++ {
			if strings.Contains(lines[e], end) {
				out := append(append(append([]string{}, lines[:b+1]...), body...), lines[e:]...)
				return strings.Join(out, "\n"), nil
			}
		}
	}
	return "", fmt.Errorf("no lines between markers %q and %q", begin, end)
}
