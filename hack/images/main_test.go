package main

import (
	"context"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshinit/meshinit/internal/chart"
	"github.com/meshinit/meshinit/internal/ociimage"
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

// TestChartDefaultImages checks that every image the chart refers to by
// default is one make images builds, under the same reference.
func TestChartDefaultImages(t *testing.T) {
	version, err := defaultVersion()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chart.Objects(chart.Options{}, true)
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
	for _, n := range imageNames() {
		built[Ref(n, version)] = true
	}
	for ref := range got {
		if !built[ref] {
			t.Errorf("the chart's default image %s is not one make images builds (%v)", ref, imageNames())
		}
	}
	for _, must := range []string{"webhook", "redirector"} {
		if !got[Ref(must, version)] {
			t.Errorf("the chart does not use %s by default (uses %v)", Ref(must, version), got)
		}
	}
}

// TestStaticImages builds the test server for both architectures, builds
// its images twice (same digests), checks users and entrypoints, then pushes
// the index to an in-process registry and reads it back.
func TestStaticImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go binaries")
	}
	_, file, _, _ := runtime.Caller(0)
	t.Chdir(filepath.Join(filepath.Dir(file), "..", ".."))
	ctx := context.Background()
	created := time.Unix(1700000000, 0).UTC()
	tmp := t.TempDir()

	build := func(spec staticSpec) (v1.ImageIndex, []v1.Image) {
		var adds []mutate.IndexAddendum
		var imgs []v1.Image
		for _, arch := range []string{"amd64", "arm64"} {
			p, err := ociimage.LookupPlatform(arch)
			if err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(tmp, filepath.Base(spec.bin.pkg)+"-"+arch)
			if err := spec.bin.build(ctx, p, "v-test", bin); err != nil {
				t.Fatal(err)
			}
			img, err := buildStatic(spec, p, bin, "v-test", created)
			if err != nil {
				t.Fatal(err)
			}
			op := p.OCI()
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &op}})
			imgs = append(imgs, img)
		}
		return newIndex(adds...), imgs
	}
	digest := func(a ociimage.Artifact) v1.Hash {
		d, err := a.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	prefix := strings.TrimPrefix(srv.URL, "http://") + "/meshinit"

	for _, tc := range []struct {
		spec staticSpec
		user string
	}{
		{testAppImage, "65532:65532"},
		{testProxyImage, "1337:1337"},
	} {
		t.Run(tc.spec.name, func(t *testing.T) {
			idx, imgs := build(tc.spec)
			again, _ := build(tc.spec)
			if a, b := digest(idx), digest(again); a != b {
				t.Errorf("two builds differ: %s, %s", a, b)
			}
			for i, img := range imgs {
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.Config.User != tc.user || cf.Config.Entrypoint[0] != tc.spec.path || cf.Architecture != []string{"amd64", "arm64"}[i] {
					t.Errorf("config: user %q entrypoint %v arch %s", cf.Config.User, cf.Config.Entrypoint, cf.Architecture)
				}
			}

			ref := prefix + "/" + tc.spec.name + ":v-test"
			if err := push(ctx, ref, idx); err != nil {
				t.Fatal(err)
			}
			tag, err := name.NewTag(ref)
			if err != nil {
				t.Fatal(err)
			}
			pulled, err := remote.Index(tag)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := digest(pulled), digest(idx); a != b {
				t.Errorf("pulled index %s, pushed %s", a, b)
			}
			m, err := pulled.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var platforms []string
			for _, d := range m.Manifests {
				platforms = append(platforms, d.Platform.String())
			}
			if strings.Join(platforms, ",") != "linux/amd64,linux/arm64/v8" {
				t.Errorf("pushed platforms %v", platforms)
			}
		})
	}
}

// TestWebhookImage checks the webhook's recipe: the static binary (the
// test server stands in for the webhook, whose build takes minutes; make
// images builds the real one) as the entrypoint, run as 65532, the chart's
// runAsUser, with only the user files beside it.
func TestWebhookImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	_, file, _, _ := runtime.Caller(0)
	t.Chdir(filepath.Join(filepath.Dir(file), "..", ".."))
	p, err := ociimage.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "meshinit-webhook")
	if err := testserverBin.build(context.Background(), p, "v-test", bin); err != nil {
		t.Fatal(err)
	}
	img, err := buildStatic(webhookImage, p, bin, "v-test", time.Time{})
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
	if err := ociimage.Unpack(img, dir); err != nil {
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
