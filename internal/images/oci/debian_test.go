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
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseSimulatedInstall(t *testing.T) {
	out := []byte(`NOTE: This is only a simulation!
Reading package lists...
Inst netbase (6.4 Debian:12.15/oldstable [all])
Inst libgcc-s1 (12.2.0-14+deb12u1 Debian:12.15/oldstable [arm64]) []
Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [arm64])
Inst tzdata (1:2024a-0+deb12u1 Debian:12.15/oldstable [all])
Conf netbase (6.4 Debian:12.15/oldstable [all])
`)
	debs, err := parseSimulatedInstall(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Deb{
		{Name: "netbase", Version: "6.4", Arch: "all"},
		{Name: "libgcc-s1", Version: "12.2.0-14+deb12u1", Arch: "arm64"},
		{Name: "libc6", Version: "2.36-9+deb12u14", Arch: "arm64"},
		{Name: "tzdata", Version: "1:2024a-0+deb12u1", Arch: "all"},
	}
	if !slices.Equal(debs, want) {
		t.Errorf("got %+v\nwant %+v", debs, want)
	}
	if got := debFileName(want[3]); got != "tzdata_1%3a2024a-0+deb12u1_all.deb" {
		t.Errorf("debFileName = %q", got)
	}
	if _, err := parseSimulatedInstall([]byte("0 upgraded, 0 newly installed\n")); err == nil {
		t.Error("no Inst lines: no error")
	}
}

func TestHostCodename(t *testing.T) {
	f := filepath.Join(t.TempDir(), "os-release")
	must(t, os.WriteFile(f, []byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME=bookworm\n"), 0o644))
	if got, err := hostCodename(f); err != nil || got != "bookworm" {
		t.Errorf("hostCodename = %q, %v", got, err)
	}
	must(t, os.WriteFile(f, []byte("ID=alpine\n"), 0o644))
	if _, err := hostCodename(f); err == nil {
		t.Error("no VERSION_CODENAME: no error")
	}
}

// requireRoot skips tests that write the shared package cache or run apt
// as root would; CI runs as root, so there they always run.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipped: needs root (apt-get into %s, chroot, network namespaces); CI runs as root", DefaultCacheDir())
	}
}

// TestFetchDebs downloads a small library with its dependencies for every
// supported architecture, then fetches again with no network at all, which
// must be served from the cache.
func TestFetchDebs(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	for _, arch := range SupportedArchs() {
		t.Run(arch, func(t *testing.T) {
			p, _ := LookupPlatform(arch)
			opts := DebianOptions{Platform: p, Suite: "bookworm"}
			debs, err := FetchDebs(ctx, opts, "libmnl0")
			if err != nil {
				t.Fatal(err)
			}
			var mnl Deb
			names := map[string]bool{}
			for _, d := range debs {
				names[d.Name] = true
				if d.Name == "libmnl0" {
					mnl = d
				}
				if d.Arch != p.DebianArch && d.Arch != "all" {
					t.Errorf("%s is for %s, want %s", d.Name, d.Arch, p.DebianArch)
				}
				if _, err := os.Stat(d.Path); err != nil {
					t.Error(err)
				}
			}
			if !names["libmnl0"] || !names["libc6"] {
				t.Fatalf("fetched %v, want libmnl0 and its dependency libc6", names)
			}
			paths, err := mnl.Paths(ctx)
			if err != nil {
				t.Fatal(err)
			}
			lib := "/usr/lib/" + p.Triplet + "/libmnl.so.0"
			if !slices.Contains(paths, lib) {
				t.Errorf("libmnl0 paths %q lack %s", paths, lib)
			}
			root := t.TempDir()
			if err := ExtractDebs(ctx, debs, root); err != nil {
				t.Fatal(err)
			}
			libs, err := SharedLibraries(root, p, lib)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(libs, "/lib/"+p.Triplet+"/libc.so.6") {
				t.Errorf("libmnl.so.0 needs %q, want libc.so.6 among them", libs)
			}

			// Again, offline: apt must not touch the network.
			t.Setenv("http_proxy", "http://127.0.0.1:9")
			again, err := FetchDebs(ctx, opts, "libmnl0")
			if err != nil {
				t.Fatalf("second fetch, offline: %v", err)
			}
			if !slices.Equal(again, debs) {
				t.Errorf("second fetch %v, want %v", again, debs)
			}
		})
	}
}
