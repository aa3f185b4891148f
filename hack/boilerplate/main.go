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

package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	fix := flag.Bool("fix", false, "add the header to the files that lack it")
	flag.Parse()
	root, err := repoRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "boilerplate:", err)
		os.Exit(2)
	}
	missing, err := check(root, *fix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "boilerplate:", err)
		os.Exit(2)
	}
	for _, f := range missing {
		fmt.Println(f)
	}
	if len(missing) > 0 && !*fix {
		fmt.Fprintf(os.Stderr, "boilerplate: %d file(s) without the licence header (hack/boilerplate/boilerplate.go.txt); add it with: go run ./hack/boilerplate -fix\n", len(missing))
		os.Exit(1)
	}
}

// repoRoot is the root of the git work tree dir is in.
func repoRoot(dir string) (string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("finding the repository's root: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// check returns the tracked files under root that lack their header; with
// fix it adds the header to each (and still returns them).
func check(root string, fix bool) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var missing []string
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k := kindOf(p)
		if k == none {
			continue
		}
		file := filepath.Join(root, filepath.FromSlash(p))
		content, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			continue // deleted, not yet staged
		}
		if err != nil {
			return nil, err
		}
		if hasHeader(k, content) {
			continue
		}
		missing = append(missing, p)
		if fix {
			fixed := withHeader(k, content)
			if bytes.Equal(fixed, content) {
				continue
			}
			fi, err := os.Stat(file)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(file, fixed, fi.Mode().Perm()); err != nil {
				return nil, err
			}
		}
	}
	return missing, nil
}
