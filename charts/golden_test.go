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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
)

// scenarios are the values the golden renders and the lint use.
var scenarios = []struct {
	name   string
	values func(t *testing.T) map[string]any
}{
	{"default", func(*testing.T) map[string]any { return nil }},
	{"cert-manager", func(*testing.T) map[string]any {
		return map[string]any{"certManager": map[string]any{"enabled": true}}
	}},
	// The Secret provided by the user, and the webhook scaled down: NOTES.txt
	// says what both mean.
	{"existing-secret-zero-replicas", func(*testing.T) map[string]any {
		return map[string]any{"certs": map[string]any{"existingSecret": true}, "webhook": map[string]any{"replicas": 0}}
	}},
	{"every-knob", func(t *testing.T) map[string]any { return valuesFile(t, "testdata/every-knob.yaml") }},
	// The injector inside the API server, with the values that change what
	// it injects and refuses.
	{"policy-injector", func(*testing.T) map[string]any {
		return map[string]any{"injector": "policy", "inject": map[string]any{
			"placement": "last", "privileged": true, "podSecurity": "deny", "logFormat": "json", "redirect": map[string]any{"ipv6": "off"},
		}}
	}},
	// Mesh presets (charts/meshinit/presets): Istio's with the webhook, and
	// Linkerd's with the policy injector, its proxy GID overridden.
	{"mesh-istio", func(*testing.T) map[string]any { return map[string]any{"mesh": "istio"} }},
	{"mesh-linkerd-policy-injector", func(*testing.T) map[string]any {
		return map[string]any{"mesh": "linkerd", "injector": "policy", "inject": map[string]any{
			"redirect": map[string]any{"proxy-gid": 2103},
		}}
	}},
}

func valuesFile(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// renderAll renders every template, NOTES.txt and tests included, as one
// document: each file under a "# Source:" line, in path order. The API
// server serves MutatingAdmissionPolicy v1 (injector: policy needs it).
func renderAll(t *testing.T, values map[string]any) string {
	t.Helper()
	files, err := charts.Render(charts.Options{Values: values, IncludeCRDs: false, APIVersions: []string{mapAPI}})
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, 0, len(files))
	for p, s := range files {
		if strings.TrimSpace(s) != "" {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		b.WriteString("---\n# Source: " + p + "\n")
		b.WriteString(strings.TrimLeft(files[p], "\n"))
		if !strings.HasSuffix(files[p], "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestGolden compares whole renders with testdata/golden/<scenario>.yaml;
// go test ./charts -run TestGolden -update rewrites them.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := renderAll(t, sc.values(t))
			file := filepath.Join("testdata", "golden", sc.name+".yaml")
			testkit.Golden(t, file, []byte(got))
		})
	}
}
