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

package release_test

import (
	"context"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/images"
	"github.com/meshinit/meshinit/internal/release"
)

// TestReleaseThroughARegistry: the images and the chart a release pushes
// to a real OCI registry (go-containerregistry's, served in-process on
// loopback) come back by digest through the registry API alone, and the
// chart pulled back as Helm pulls it renders every image as
// <registry>/<image>@<the digest the registry holds>, for the version
// released. One architecture (the host's) keeps it quick; make release
// builds amd64 and arm64 the same way.
func TestReleaseThroughARegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	prefix := strings.TrimPrefix(srv.URL, "http://") + "/meshinit"
	const version = "9.8.7"
	ctx := context.Background()
	dir := t.TempDir()

	pushed, err := release.PushImages(ctx, prefix, version, filepath.Join(dir, "images"), nil, images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range images.Names() {
		im, ok := pushed[n]
		if !ok {
			t.Fatalf("image %s not pushed: %v", n, pushed)
		}
		ref, err := name.NewDigest(im.Repository + "@" + im.Digest)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref)
		if err != nil {
			t.Fatalf("pulling %s back by digest: %v", ref, err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 {
			t.Errorf("%s: %d platforms, want 1 (the host's)", ref, len(m.Manifests))
		}
		for _, d := range m.Manifests {
			if _, err := remote.Image(ref.Context().Digest(d.Digest.String())); err != nil {
				t.Errorf("%s: platform %v: %v", ref, d.Platform, err)
			}
		}
	}

	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := release.PinChart(ch, version, pushed); err != nil {
		t.Fatal(err)
	}
	file, err := release.PackageChart(ch, filepath.Join(dir, "chart"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(file), "meshinit-"+version+".tgz"; got != want {
		t.Errorf("chart archive %s, want %s", got, want)
	}
	ref, err := release.PushChart(file, prefix+"/charts")
	if err != nil {
		t.Fatal(err)
	}
	if want := prefix + "/charts/meshinit:" + version + "@sha256:"; !strings.HasPrefix(ref, want) {
		t.Errorf("chart pushed as %s, want %s...", ref, want)
	}

	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP())
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := client.Pull(prefix+"/charts/meshinit:"+version, helmregistry.PullOptWithChart(true))
	if err != nil {
		t.Fatalf("helm pull: %v", err)
	}
	got, err := loader.LoadArchive(strings.NewReader(string(pulled.Chart.Data)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Version != version || got.Metadata.AppVersion != version {
		t.Errorf("pulled chart version %s appVersion %s, want %s", got.Metadata.Version, got.Metadata.AppVersion, version)
	}
	// helm lint --strict on what was pulled: warnings fail too.
	expanded := filepath.Join(dir, "pulled")
	if err := chartutil.Expand(expanded, strings.NewReader(string(pulled.Chart.Data))); err != nil {
		t.Fatal(err)
	}
	for _, m := range lint.AllWithKubeVersion(filepath.Join(expanded, "meshinit"), nil, "meshinit-system", nil).Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint --strict: %s", m)
		}
	}
	out, err := charts.RenderChart(got, charts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	// Every reference with a tag or a digest: what a pod pulls. (The
	// policy's trust list also names the proxy's bare repository.)
	re := regexp.MustCompile(regexp.QuoteMeta(prefix) + `/[a-z-]+(:[^"@\s']*|@sha256:[0-9a-f]{64}|:[^"@\s']*@sha256:[0-9a-f]{64})`)
	for file, manifest := range out {
		if !strings.HasSuffix(file, "NOTES.txt") {
			refs = append(refs, re.FindAllString(manifest, -1)...)
		}
	}
	slices.Sort(refs)
	refs = slices.Compact(refs)
	var want []string
	for _, n := range images.Names() {
		want = append(want, pushed[n].Repository+"@"+pushed[n].Digest)
	}
	slices.Sort(want)
	if !slices.Equal(refs, want) {
		t.Errorf("the released chart renders images\n%q\nwant each by the digest the registry holds\n%q", refs, want)
	}
	for _, r := range refs {
		d, err := name.NewDigest(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Head(d); err != nil {
			t.Errorf("the chart's %s is not in the registry: %v", r, err)
		}
	}
	values := string(got.Raw[slices.IndexFunc(got.Raw, func(f *chart.File) bool { return f.Name == "values.yaml" })].Data)
	if !strings.Contains(values, "# digest (sha256:...) pins the image") {
		t.Error("the released values.yaml lost its comments (helm show values shows them)")
	}
	_ = os.Remove(file)
}

// TestPinChartNeedsEveryImage: a release with an image missing, an
// unknown one or a digest that is not sha256 fails, naming it, rather than
// publish a chart that pulls a tag.
func TestPinChartNeedsEveryImage(t *testing.T) {
	all := map[string]release.Image{}
	for n := range release.ImageValues {
		all[n] = release.Image{Repository: "r.example/meshinit/" + n, Digest: "sha256:" + strings.Repeat("a", 64)}
	}
	without := func(n string) map[string]release.Image {
		m := maps.Clone(all)
		delete(m, n)
		return m
	}
	with := func(n string, im release.Image) map[string]release.Image {
		m := maps.Clone(all)
		m[n] = im
		return m
	}
	for _, tc := range []struct {
		name   string
		images map[string]release.Image
		want   string
	}{
		{"no redirector", without("redirector"), `"redirector"`},
		{"an unknown image", with("sidecar", all["webhook"]), `"sidecar"`},
		{"a tag for a digest", with("webhook", release.Image{Repository: "r.example/meshinit/webhook", Digest: "v1"}), `"v1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := charts.Load()
			if err != nil {
				t.Fatal(err)
			}
			err = release.PinChart(ch, "1.0.0", tc.images)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("PinChart: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
