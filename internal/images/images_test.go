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

package images

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/images/oci"
)

func TestTagSafe(t *testing.T) {
	for in, want := range map[string]string{
		"v0.1.0-3-gabc1234-dirty\n": "v0.1.0-3-gabc1234-dirty",
		"":                          "dev",
		"release/1.0+build":         "release-1.0-build",
		strings.Repeat("a", 200):    strings.Repeat("a", 128),
	} {
		if got := tagSafe(in); got != want {
			t.Errorf("tagSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVersionVars checks that each variable Build sets with -ldflags -X is
// a package-level string variable of that name: go build ignores -X for a
// variable that does not exist, so a moved or renamed one would leave every
// image at its default version.
func TestVersionVars(t *testing.T) {
	for _, b := range []binary{redirectorBin, webhookImage.binary(), testAppImage.binary(), testProxyImage.binary(), pluginBin} {
		if b.versionVar == "" {
			continue
		}
		pkg, name, _ := strings.Cut(strings.TrimPrefix(b.versionVar, module+"/"), ".")
		dir := filepath.Join("..", "..", filepath.FromSlash(pkg))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Go files in %s (%v)", b.versionVar, dir, err)
			continue
		}
		found := false
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, spec := range g.Specs {
						if slices.ContainsFunc(spec.(*ast.ValueSpec).Names, func(id *ast.Ident) bool { return id.Name == name }) {
							found = true
						}
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no package-level variable %s in %s", b.versionVar, name, dir)
		}
	}
}

// TestChartDefaultImages checks that every image the chart refers to by
// default is one make images builds, under the same reference.
func TestChartDefaultImages(t *testing.T) {
	version, err := DefaultVersion()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := charts.Objects(charts.Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ConfigMap":
			// The webhook's config file names the redirector image.
			for _, v := range o.Object["data"].(map[string]any) {
				for _, line := range strings.Split(v.(string), "\n") {
					if ref, ok := strings.CutPrefix(line, "image: "); ok {
						got[strings.Trim(ref, `"`)] = true
					}
				}
			}
		case "Deployment", "Pod":
			spec := o.Object["spec"].(map[string]any)
			if o.GetKind() == "Deployment" {
				spec = spec["template"].(map[string]any)["spec"].(map[string]any)
			}
			for _, field := range []string{"initContainers", "containers"} {
				cs, _ := spec[field].([]any)
				for _, c := range cs {
					got[c.(map[string]any)["image"].(string)] = true
				}
			}
		}
	}
	if len(got) == 0 {
		t.Fatal("the chart names no images")
	}
	built := map[string]bool{}
	for _, n := range Names() {
		built[Ref(n, version)] = true
	}
	for ref := range got {
		if !built[ref] {
			t.Errorf("the chart's default image %s is not one make images builds (%v)", ref, Names())
		}
	}
	for _, must := range []string{"webhook", "redirector"} {
		if !got[Ref(must, version)] {
			t.Errorf("the chart does not use %s by default (uses %v)", Ref(must, version), got)
		}
	}
}

// TestBuild builds test-app and test-proxy for both architectures with
// Build, twice (same files, same digests), checks the archives, users and
// entrypoints, then checks that the first build pushed each index to an
// in-process registry. It runs in this package's directory, not the
// module root: Build works from anywhere inside the module.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go binaries")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	prefix := strings.TrimPrefix(srv.URL, "http://") + "/meshinit"

	build := func(push string) ([]Archive, string) {
		var out strings.Builder
		as, err := Build(ctx, Options{
			Archs:   []string{"amd64", "arm64"},
			Version: "v/test", // made tag-safe: v-test
			Out:     filepath.Join(t.TempDir(), "images"),
			Only:    []string{"test-proxy", "test-app"}, // built in Names' order
			Push:    push,
			Log:     &out,
		})
		if err != nil {
			t.Fatal(err)
		}
		return as, out.String()
	}
	archives, logged := build(prefix + "/")
	again, _ := build("")

	var want, lines []string
	for _, name := range []string{"test-app", "test-proxy"} {
		for _, arch := range []string{"amd64", "arm64", ""} {
			want = append(want, name+" "+arch)
		}
	}
	var got []string
	for i, a := range archives {
		got = append(got, a.Image+" "+a.Arch)
		wantFile := a.Image + ".oci.tar"
		if a.Arch != "" {
			wantFile = a.Image + "-" + a.Arch + ".oci.tar"
		}
		if filepath.Base(a.File) != wantFile || a.Ref != "ghcr.io/meshinit/"+a.Image+":v-test" || !strings.HasPrefix(a.Digest, "sha256:") {
			t.Errorf("archive %+v", a)
		}
		if i < len(again) && (again[i].Digest != a.Digest || !sameContents(t, again[i].File, a.File)) {
			t.Errorf("two builds of %s differ: %s, %s", filepath.Base(a.File), a.Digest, again[i].Digest)
		}
		fi, err := os.Stat(a.File)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%d bytes", a.File, a.Ref, a.Digest, fi.Size()))
		if a.Arch == "" {
			lines = append(lines, fmt.Sprintf("pushed\t%s/%s:v-test@%s", prefix, a.Image, a.Digest))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || len(again) != len(archives) {
		t.Fatalf("archives %v (again %d), want %v", got, len(again), want)
	}
	if w := strings.Join(lines, "\n") + "\n"; logged != w {
		t.Errorf("log:\n%s\nwant:\n%s", logged, w)
	}

	for _, a := range archives {
		if a.Arch != "" {
			continue
		}
		t.Run(a.Image, func(t *testing.T) {
			user := map[string]string{"test-app": "65532:65532", "test-proxy": "1337:1337"}[a.Image]
			idx := archivedIndex(t, a)
			m, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var platforms []string
			for _, d := range m.Manifests {
				platforms = append(platforms, d.Platform.String())
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Config.User != user || cf.Config.Entrypoint[0] != "/usr/local/bin/testserver" || cf.Architecture != d.Platform.Architecture || cf.Config.Labels["org.opencontainers.image.version"] != "v-test" {
					t.Errorf("config: user %q entrypoint %v arch %s labels %v", cf.Config.User, cf.Config.Entrypoint, cf.Architecture, cf.Config.Labels)
				}
				if !cf.Created.Time.Equal(time.Unix(1700000000, 0)) {
					t.Errorf("created %v, want SOURCE_DATE_EPOCH", cf.Created)
				}
			}
			if strings.Join(platforms, ",") != "linux/amd64,linux/arm64/v8" {
				t.Errorf("index platforms %v", platforms)
			}

			tag, err := name.NewTag(prefix + "/" + a.Image + ":v-test")
			if err != nil {
				t.Fatal(err)
			}
			pulled, err := remote.Index(tag)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := pulled.Digest(); err != nil || d.String() != a.Digest {
				t.Errorf("pulled index %s (%v), pushed %s", d, err, a.Digest)
			}
		})
	}
}

// TestBuildErrors checks that Build refuses bad options before building
// anything.
func TestBuildErrors(t *testing.T) {
	for _, o := range []Options{
		{Out: t.TempDir(), Only: []string{"nginx"}},
		{Out: t.TempDir(), Archs: []string{"riscv64"}},
		{Only: []string{"test-app"}},
	} {
		if as, err := Build(context.Background(), o); err == nil || len(as) != 0 {
			t.Errorf("Build(%+v) = %v, %v; want an error", o, as, err)
		}
	}
}

// archivedIndex is the image index an index archive holds.
func archivedIndex(t *testing.T, a Archive) v1.ImageIndex {
	t.Helper()
	root, err := oci.ReadArchive(a.File, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest.String() != a.Digest {
		t.Fatalf("%s: index.json %+v, want the index %s", a.File, m.Manifests, a.Digest)
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// sameContents reports whether files a and b hold the same bytes.
func sameContents(t *testing.T, a, b string) bool {
	t.Helper()
	ab, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ab, bb)
}

// TestWebhookImage checks the webhook's recipe: the static binary (the
// test server stands in for the webhook, whose build takes minutes; make
// images builds the real one) as the entrypoint, run as 65532, the chart's
// runAsUser, with only the user files beside it.
func TestWebhookImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	p, err := oci.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "meshinit-webhook")
	if err := testAppImage.binary().build(context.Background(), "", p, "v-test", bin); err != nil {
		t.Fatal(err)
	}
	img, err := webhookImage.image(p, bin, "v-test", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/meshinit-webhook" || cf.Config.Labels["org.opencontainers.image.version"] != "v-test" {
		t.Errorf("webhook image config %+v", cf.Config)
	}
	files := unpackedFiles(t, img)
	want := []string{".", "etc", "etc/group", "etc/passwd", "tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/meshinit-webhook"}
	if len(files) != len(want) {
		t.Errorf("webhook image files %v, want %v", files, want)
	}
	for _, w := range want {
		if !files[w] {
			t.Errorf("webhook image lacks %s (has %v)", w, files)
		}
	}
}

func unpackedFiles(t *testing.T, img v1.Image) map[string]bool {
	dir := t.TempDir()
	if err := oci.Unpack(img, dir); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
