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
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/meshinit/meshinit/charts"
)

// TestLoadIsHelmsLoad: the chart loaded from the embedded files is the one
// Helm loads (and `helm package` packs) from the directory, file by file:
// .helmignore applies alike, and no Go file or test data of this package is
// part of it.
func TestLoadIsHelmsLoad(t *testing.T) {
	embedded, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := loader.LoadDir("meshinit")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ch *chart.Chart) []string {
		var out []string
		for _, f := range ch.Raw {
			out = append(out, f.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(embedded), names(dir); !slices.Equal(got, want) {
		t.Fatalf("embedded chart's files %q, Helm's from the directory %q", got, want)
	}
	for _, f := range dir.Raw {
		i := slices.IndexFunc(embedded.Raw, func(e *chart.File) bool { return e.Name == f.Name })
		if string(embedded.Raw[i].Data) != string(f.Data) {
			t.Errorf("%s differs between the embedded chart and the directory", f.Name)
		}
		if strings.HasSuffix(f.Name, ".go") || strings.HasPrefix(f.Name, "testdata/") {
			t.Errorf("the chart contains %s", f.Name)
		}
	}
	if len(embedded.Templates) != len(dir.Templates) || len(embedded.CRDObjects()) != len(dir.CRDObjects()) {
		t.Errorf("embedded chart: %d templates and %d CRDs; Helm's from the directory: %d and %d",
			len(embedded.Templates), len(embedded.CRDObjects()), len(dir.Templates), len(dir.CRDObjects()))
	}
}
