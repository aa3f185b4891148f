package command

import (
	"bytes"
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// TestChartArgs: the webhook container's args in the chart are flags of
// this command, with the values the chart means.
func TestChartArgs(t *testing.T) {
	objs, err := charts.Objects(charts.Options{Namespace: "meshinit-system"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == "meshinit-webhook" {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("the chart renders no meshinit-webhook Deployment with one container")
	}
	c := dep.Spec.Template.Spec.Containers[0]
	var o webhook.ServerOptions
	f, err := parseFlags(c.Args, &o, &bytes.Buffer{})
	if err != nil || f.fs.NArg() > 0 {
		t.Fatalf("the chart's args %q: %v %q", c.Args, err, f.fs.Args())
	}
	if o.Path != "/inject" || o.Port != int(c.Ports[0].ContainerPort) || o.EnableHTTP2 || o.TLSMinVersion != "1.2" ||
		o.Certs.Mode != "self-managed" || !strings.HasPrefix(o.ConfigFile, c.VolumeMounts[0].MountPath+"/") {
		t.Errorf("options from the chart's args: %+v", o)
	}
	if f.logFormat != "json" || f.logLevel != "info" {
		t.Errorf("log flags: %+v", f)
	}
	if dep.Spec.Template.Labels[webhook.PodLabel] != "false" {
		t.Errorf("webhook pods lack %s=false", webhook.PodLabel)
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
