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

package oci

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func hostPlatform(t *testing.T) Platform {
	t.Helper()
	p, err := HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSharedLibrariesOfAHostProgram(t *testing.T) {
	p := hostPlatform(t)
	libs, err := SharedLibraries("/", p, "/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	var libc, loader bool
	for _, l := range libs {
		libc = libc || strings.HasSuffix(l, "/libc.so.6")
		loader = loader || strings.Contains(filepath.Base(l), "ld-linux")
	}
	if !libc || !loader {
		t.Errorf("SharedLibraries(/bin/ls) = %q, want libc.so.6 and the loader", libs)
	}
	if !slices.IsSorted(libs) {
		t.Errorf("not sorted: %q", libs)
	}
}

func TestSharedLibrariesNamesWhatIsMissing(t *testing.T) {
	root := t.TempDir()
	b, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/bin/ls"), b, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/bin/script"), []byte("#!/bin/sh\n"), 0o755))
	_, err = SharedLibraries(root, hostPlatform(t), "/usr/bin/ls", "/usr/bin/script")
	if err == nil || !strings.Contains(err.Error(), "libc.so.6 (needed by /usr/bin/ls)") {
		t.Errorf("err = %v, want it to name libc.so.6 needed by /usr/bin/ls", err)
	}
}

func TestResolveInRootStaysInRoot(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "usr/lib/x"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/lib/x/ld.so.2"), []byte("x"), 0o755))
	must(t, os.Symlink("usr/lib", filepath.Join(root, "lib")))
	must(t, os.MkdirAll(filepath.Join(root, "lib64"), 0o755))
	// Absolute, through a linked directory: resolved inside root.
	must(t, os.Symlink("/lib/x/ld.so.2", filepath.Join(root, "lib64/ld.so.2")))
	got, links, err := resolveInRoot(root, "/lib64/ld.so.2")
	if err != nil {
		t.Fatal(err)
	}
	if got != "/usr/lib/x/ld.so.2" || !slices.Equal(links, []string{"/lib64/ld.so.2", "/lib"}) {
		t.Errorf("resolveInRoot = %q via %q", got, links)
	}
	must(t, os.Symlink("../../../../etc/passwd", filepath.Join(root, "escape")))
	if got, _, err := resolveInRoot(root, "/escape"); err == nil {
		t.Errorf("escape resolved to %q, want not found inside root", got)
	}
	must(t, os.Symlink("loop", filepath.Join(root, "loop")))
	if _, _, err := resolveInRoot(root, "/loop"); err == nil {
		t.Error("link loop: no error")
	}
}

func TestCheckStatic(t *testing.T) {
	p := hostPlatform(t)
	if err := CheckStatic("/bin/ls", p); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("CheckStatic(/bin/ls) = %v, want dynamically linked", err)
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/static\n"), 0o644))
	bin := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+p.GOARCH, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := CheckStatic(bin, p); err != nil {
		t.Errorf("CheckStatic(static Go program) = %v", err)
	}
	other, _ := LookupPlatform("arm64")
	if p.GOARCH == "arm64" {
		other, _ = LookupPlatform("amd64")
	}
	if err := CheckStatic(bin, other); err == nil {
		t.Errorf("CheckStatic for %s of a %s program: no error", other, p)
	}
	if err := CheckStatic(filepath.Join(dir, "main.go"), p); err == nil {
		t.Error("CheckStatic(source file): no error")
	}
}

func TestIsELF(t *testing.T) {
	root := t.TempDir()
	b, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(root, "prog"), b, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "script"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink("/prog", filepath.Join(root, "link")))
	for p, want := range map[string]bool{"/prog": true, "/link": true, "/script": false, "/": false} {
		if got, err := IsELF(root, p); err != nil || got != want {
			t.Errorf("IsELF(%s) = %v, %v; want %v", p, got, err, want)
		}
	}
}
