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

package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// TestParseFlags: a version Helm would refuse as a chart version, or no
// registry, fails before anything is built, naming the flag and the value.
func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-version", "1.2.3-rc.1", "-registry", "r.example/meshinit", "-arch", "amd64", "-plugin-platforms", "linux/amd64,darwin/arm64"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.version != "1.2.3-rc.1" || o.registry != "r.example/meshinit" || !slices.Equal(o.archs, []string{"amd64"}) ||
		!slices.Equal(o.pluginPlatforms, []string{"linux/amd64", "darwin/arm64"}) {
		t.Errorf("options %+v", o)
	}
	if got := chartRegistry("ghcr.io/meshinit/"); got != "ghcr.io/meshinit/charts" {
		t.Errorf("chart registry %s, want ghcr.io/meshinit/charts", got)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-version", "v1.2.3", "-registry", "r.example"}, `-version "v1.2.3"`},
		{[]string{"-version", "1.2", "-registry", "r.example"}, `-version "1.2"`},
		{[]string{"-version", "1.2.3"}, "-registry"},
	} {
		var out strings.Builder
		if _, err := parseFlags(bad.args, &out); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error naming %s", bad.args, err, bad.want)
		}
	}
}
