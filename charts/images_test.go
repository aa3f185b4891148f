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

package charts_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/charts"
)

// imagesIn are the image references a render holds: every container's and
// init container's image, and the init container's image in the webhook's
// config file (the injector's), sorted and deduplicated.
func imagesIn(t *testing.T, opts charts.Options) []string {
	t.Helper()
	out, err := charts.Render(opts)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*-?\s*"?image"?:\s*"?([^"\s]+)"?\s*$`)
	var refs []string
	for name, manifest := range out {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(manifest, -1) {
			refs = append(refs, m[1])
		}
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// TestImageReferences: each image value renders as repository:tag (the
// chart's appVersion by default), as repository@digest when a digest pins
// it (a release's chart), and under global.imageRegistry a mirror replaces
// each repository's registry and keeps its path and digest.
func TestImageReferences(t *testing.T) {
	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	v := ch.Metadata.AppVersion
	d := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	pinned := map[string]any{
		"webhook": map[string]any{"image": map[string]any{"digest": d('a')}},
		"inject":  map[string]any{"image": map[string]any{"digest": d('b')}},
		"tests":   map[string]any{"image": map[string]any{"app": map[string]any{"digest": d('c')}, "proxy": map[string]any{"digest": d('d')}}},
	}
	withMirror := func(vals map[string]any, mirror string) map[string]any {
		out := map[string]any{"global": map[string]any{"imageRegistry": mirror}}
		for k, v := range vals {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"tags", nil, []string{
			"ghcr.io/meshinit/redirector:" + v, "ghcr.io/meshinit/test-app:" + v, "ghcr.io/meshinit/test-proxy:" + v, "ghcr.io/meshinit/webhook:" + v,
		}},
		{"digests", pinned, []string{
			"ghcr.io/meshinit/redirector@" + d('b'), "ghcr.io/meshinit/test-app@" + d('c'), "ghcr.io/meshinit/test-proxy@" + d('d'), "ghcr.io/meshinit/webhook@" + d('a'),
		}},
		{"a mirror", withMirror(pinned, "mirror.example:5000/"), []string{
			"mirror.example:5000/meshinit/redirector@" + d('b'), "mirror.example:5000/meshinit/test-app@" + d('c'), "mirror.example:5000/meshinit/test-proxy@" + d('d'), "mirror.example:5000/meshinit/webhook@" + d('a'),
		}},
		{"a mirror with a path, repositories without a registry", withMirror(map[string]any{
			"webhook": map[string]any{"image": map[string]any{"repository": "meshinit/webhook"}},
			"inject":  map[string]any{"image": map[string]any{"repository": "localhost/meshinit/redirector"}},
		}, "mirror.example/ghcr"), []string{
			"mirror.example/ghcr/meshinit/redirector:" + v, "mirror.example/ghcr/meshinit/test-app:" + v, "mirror.example/ghcr/meshinit/test-proxy:" + v, "mirror.example/ghcr/meshinit/webhook:" + v,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := imagesIn(t, charts.Options{Values: tc.values}); !slices.Equal(got, tc.want) {
				t.Errorf("images\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	for _, bad := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"a tag for a digest", map[string]any{"webhook": map[string]any{"image": map[string]any{"digest": "v1"}}}, "/webhook/image/digest"},
		{"a short digest", map[string]any{"inject": map[string]any{"image": map[string]any{"digest": "sha256:abc"}}}, "/inject/image/digest"},
		{"a mirror with a scheme", map[string]any{"global": map[string]any{"imageRegistry": "https://mirror.example"}}, "/global/imageRegistry"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			_, err := charts.Render(charts.Options{Values: bad.values})
			if err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("render: %v, want an error naming %s", err, bad.want)
			}
		})
	}
}
