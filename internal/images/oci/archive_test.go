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
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testImage(t *testing.T, arch string, content string) v1.Image {
	t.Helper()
	p, err := LookupPlatform(arch)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayer([]File{
		RegularFile("/bin/hello", 0o755, []byte(content)),
		Symlink("/bin/hi", "hello"),
		Dir("/tmp", 0o777|os.ModeSticky),
	}, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := NewImage(Config{Platform: p, Entrypoint: []string{"/bin/hello"}}, l)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"meshinit/redirector:dev":             "docker.io/meshinit/redirector:dev",
		"busybox:1":                           "docker.io/library/busybox:1",
		"ghcr.io/meshinit/redirector:v0.1.0":  "ghcr.io/meshinit/redirector:v0.1.0",
		"localhost:5000/meshinit/webhook:abc": "localhost:5000/meshinit/webhook:abc",
	} {
		got, err := NormalizeRef(in)
		if err != nil || got != want {
			t.Errorf("NormalizeRef(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "meshinit/redirector", "Upper/case:x", "meshinit/redirector@sha256:" + string(bytes.Repeat([]byte("a"), 64))} {
		if got, err := NormalizeRef(bad); err == nil {
			t.Errorf("NormalizeRef(%q) = %q, want an error", bad, got)
		}
	}
}

// archiveEntries lists the tar's entry names and returns index.json.
func archiveEntries(t *testing.T, b []byte) ([]string, v1.IndexManifest) {
	t.Helper()
	var names []string
	var index v1.IndexManifest
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "index.json" {
			if err := json.NewDecoder(tr).Decode(&index); err != nil {
				t.Fatal(err)
			}
		}
	}
	return names, index
}

func TestWriteArchiveImage(t *testing.T) {
	img := testImage(t, "amd64", "hello")
	var a, b bytes.Buffer
	if err := WriteArchive(&a, "meshinit/test:v1", img); err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(&b, "meshinit/test:v1", testImage(t, "amd64", "hello")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same image differ")
	}
	names, index := archiveEntries(t, a.Bytes())
	// manifest, config, one layer
	if len(names) != 2+3+2 || names[0] != "blobs/" || names[len(names)-1] != "oci-layout" {
		t.Errorf("entries %q", names)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want 1", len(index.Manifests))
	}
	d := index.Manifests[0]
	if d.Digest != digest(t, img) || d.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index entry %+v, want the image's manifest %s", d, digest(t, img))
	}
	for _, k := range []string{AnnotationRefName, AnnotationContainerdName} {
		if d.Annotations[k] != "docker.io/meshinit/test:v1" {
			t.Errorf("annotation %s = %q", k, d.Annotations[k])
		}
	}
	if d.Platform == nil || d.Platform.Architecture != "amd64" {
		t.Errorf("platform %+v", d.Platform)
	}

	// Read it back and unpack the root file system.
	file := filepath.Join(t.TempDir(), "img.oci.tar")
	must(t, os.WriteFile(file, a.Bytes(), 0o644))
	idx, err := ReadArchive(file, filepath.Join(t.TempDir(), "layout"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, back) != digest(t, img) {
		t.Error("read back another image")
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := Unpack(back, root); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "bin/hi")); err != nil || string(b) != "hello" {
		t.Errorf("bin/hi: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "bin/hello")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/hello: %v, %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp: %v, %v, want sticky", fi, err)
	}
}

func TestWriteArchiveIndex(t *testing.T) {
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img := testImage(t, arch, "hello "+arch)
		p, _ := LookupPlatform(arch)
		op := p.OCI()
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &op}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	var a bytes.Buffer
	if err := WriteArchive(&a, "meshinit/test:multi", idx); err != nil {
		t.Fatal(err)
	}
	names, index := archiveEntries(t, a.Bytes())
	// index manifest + 2 × (manifest, config, layer)
	if len(names) != 2+1+6+2 {
		t.Errorf("entries %q", names)
	}
	if d := index.Manifests[0]; d.MediaType != types.OCIImageIndex || d.Digest != digest(t, idx) {
		t.Errorf("index.json entry %+v, want the image index %s", d, digest(t, idx))
	}
	file := filepath.Join(t.TempDir(), "multi.oci.tar")
	must(t, os.WriteFile(file, a.Bytes(), 0o644))
	outer, err := ReadArchive(file, filepath.Join(t.TempDir(), "layout"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := outer.ImageIndex(digest(t, idx))
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"amd64", "arm64"} {
		if got := im.Manifests[i].Platform; got == nil || got.Architecture != want {
			t.Errorf("manifest %d platform %+v, want %s", i, got, want)
		}
		if _, err := inner.Image(im.Manifests[i].Digest); err != nil {
			t.Errorf("manifest %d: %v", i, err)
		}
	}
}
