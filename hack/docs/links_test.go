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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinks: every relative link in README.md, docs/*.md and docs/codes/*.md points at a
// file or directory of the repository, and a #fragment at a heading (or an
// <a id>) of the Markdown file it names. Links with a scheme (https:, ...)
// are not followed.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	codePages, err := filepath.Glob(filepath.Join(root, "docs", "codes", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append([]string{filepath.Join(root, "README.md")}, pages...), codePages...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = Anchors(string(b))
		return anchors[path]
	}
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, l := range Links(string(src)) {
			if strings.Contains(l.Target, ":") {
				continue
			}
			path, fragment, _ := strings.Cut(l.Target, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link %s: no such file", name, l.Line, l.Target)
					continue
				}
			}
			if fragment != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[fragment] {
				t.Errorf("%s:%d: link %s: no heading with that anchor", name, l.Line, l.Target)
			}
		}
	}
}
