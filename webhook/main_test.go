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

package webhook

import (
	"bytes"
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/meshinit/meshinit/charts"
)

// TestChartArgs: the webhook container's args in the chart are flags of
// this command, with the values the chart means.
func TestChartArgs(t *testing.T) {
	var dep appsv1.Deployment
	charts.MustObject(t, charts.Options{Namespace: chartNamespace}, "Deployment", "meshinit-webhook", &dep)
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("the chart's meshinit-webhook Deployment does not have one container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	var o ServerOptions
	f, err := parseFlags(c.Args, &o, &bytes.Buffer{})
	if err != nil || f.fs.NArg() > 0 {
		t.Fatalf("the chart's args %q: %v %q", c.Args, err, f.fs.Args())
	}
	if o.Path != "/inject" || o.Port != int(c.Ports[0].ContainerPort) || o.EnableHTTP2 || o.TLSMinVersion != "1.3" ||
		o.Certs.Mode != "self-managed" || !strings.HasPrefix(o.ConfigFile, c.VolumeMounts[0].MountPath+"/") {
		t.Errorf("options from the chart's args: %+v", o)
	}
	if f.logFormat != "json" || f.logLevel != "info" {
		t.Errorf("log flags: %+v", f)
	}
	if dep.Spec.Template.Labels[PodLabel] != "false" {
		t.Errorf("webhook pods lack %s=false", PodLabel)
	}
}

func TestMainExits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--version"}, 0, "dev"},
		{[]string{"--help"}, 0, ""},
		{[]string{"--port=x"}, 2, "invalid value"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--log-format=xml"}, 2, `--log-format="xml": want json or text`},
		{[]string{"--log-level=trace"}, 2, `--log-level="trace"`},
	} {
		var out bytes.Buffer
		if code := Main(context.Background(), tc.args, &out, &out); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("Main(%q) = %d, %q; want %d, containing %q", tc.args, code, out.String(), tc.code, tc.out)
		}
	}
}
