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
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// tarEntries reads a layer's uncompressed tar.
func tarEntries(t *testing.T, l v1.Layer) []*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var hs []*tar.Header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNewLayerSortsAddsParentsAndFixesMetadata(t *testing.T) {
	src := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(src, []byte("#!/bin/true\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := []File{
		Symlink("/usr/sbin/iptables-nft", "xtables-nft-multi"),
		CopyFile("/usr/sbin/xtables-nft-multi", src, 0o755),
		Dir("/tmp", fs.ModeSticky|0o777),
		RegularFile("etc/protocols", 0o644, []byte("tcp 6 TCP\n")),
		RegularFile("/etc/protocols", 0o644, []byte("tcp 6 TCP\n")), // exact duplicate: kept once
	}
	l, err := NewLayer(files, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := l.MediaType(); mt != types.OCILayer {
		t.Errorf("media type %q, want %q", mt, types.OCILayer)
	}
	var got []string
	for _, h := range tarEntries(t, l) {
		got = append(got, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0 unnamed", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: mtime %v, want the epoch", h.Name, h.ModTime)
		}
		switch h.Name {
		case "tmp/":
			if h.Mode != 0o1777 {
				t.Errorf("tmp/ mode %o, want 1777", h.Mode)
			}
		case "usr/sbin/iptables-nft":
			if h.Typeflag != tar.TypeSymlink || h.Linkname != "xtables-nft-multi" {
				t.Errorf("link %q -> %q", h.Name, h.Linkname)
			}
		case "usr/sbin/xtables-nft-multi":
			if h.Mode != 0o755 || h.Size != 12 {
				t.Errorf("%s: mode %o size %d", h.Name, h.Mode, h.Size)
			}
		}
	}
	want := "etc/ etc/protocols tmp/ usr/ usr/sbin/ usr/sbin/iptables-nft usr/sbin/xtables-nft-multi"
	if strings.Join(got, " ") != want {
		t.Errorf("entries\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestNewLayerIsReproducible(t *testing.T) {
	a := []File{RegularFile("/a", 0o644, []byte("a")), Dir("/d", 0o755), Symlink("/d/l", "../a")}
	b := []File{Symlink("/d/l", "../a"), RegularFile("/a", 0o644, []byte("a"))}
	la, err := NewLayer(a, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := NewLayer(b, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, la) != digest(t, lb) {
		t.Errorf("same files in another order: digests %s and %s", digest(t, la), digest(t, lb))
	}
	lc, err := NewLayer(a, LayerOptions{ModTime: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, la) == digest(t, lc) {
		t.Error("another ModTime gave the same digest")
	}
}

func TestNewLayerRefusesConflicts(t *testing.T) {
	for name, files := range map[string][]File{
		"same path, other content": {RegularFile("/a", 0o644, []byte("1")), RegularFile("/a", 0o644, []byte("2"))},
		"file below a link":        {Symlink("/lib64", "usr/lib64"), RegularFile("/lib64/ld.so", 0o755, nil)},
		"octal sticky bit":         {Dir("/tmp", 0o1777)},
	} {
		if _, err := NewLayer(files, LayerOptions{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFilesFromDir(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "usr/lib/x"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "usr/lib/x/m.so"), []byte("so"), 0o644))
	must(t, os.Symlink("/usr/lib/x/m.so", filepath.Join(root, "usr/lib/link")))
	files, err := FilesFromDir(root, "/usr/lib/x", "/usr/lib/link")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]File{}
	for _, f := range files {
		got[f.Path] = f
	}
	if f := got["/usr/lib/x"]; !f.Mode.IsDir() {
		t.Errorf("/usr/lib/x: %+v, want a directory", f)
	}
	if f := got["/usr/lib/x/m.so"]; !f.Mode.IsRegular() || f.Source != filepath.Join(root, "usr/lib/x/m.so") {
		t.Errorf("/usr/lib/x/m.so: %+v", f)
	}
	if f := got["/usr/lib/link"]; f.Link != "/usr/lib/x/m.so" {
		t.Errorf("/usr/lib/link: %+v, want the link itself, not followed", f)
	}
	if _, err := FilesFromDir(root, "/missing"); err == nil {
		t.Error("missing path: no error")
	}
}

func TestSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if got, _ := SourceDateEpoch(); !got.Equal(time.Unix(0, 0)) {
		t.Errorf("unset: %v", got)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if got, _ := SourceDateEpoch(); !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("set: %v", got)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := SourceDateEpoch(); err == nil {
		t.Error("not a number: no error")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
