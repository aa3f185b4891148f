package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/meshinit/meshinit/internal/chart"
)

// The release the tests install, as `helm install meshinit -n
// meshinit-system` would name it.
const (
	release          = "meshinit"
	releaseNamespace = "meshinit-system"
	webhookName      = "meshinit-webhook"
	webhookSelector  = "app.kubernetes.io/instance=meshinit,app.kubernetes.io/component=webhook"
)

// baseValues point the chart at the images the tests built, loaded, never
// pulled. extra is merged over them (one level under each top-level key).
func baseValues(extra map[string]map[string]any) map[string]any {
	webhook := map[string]any{
		"image": map[string]any{"repository": strings.TrimSuffix(webhookRef, ":"+imageTag), "tag": imageTag, "pullPolicy": "Never"},
		"inject": map[string]any{
			"image":           map[string]any{"repository": strings.TrimSuffix(redirectorRef, ":"+imageTag), "tag": imageTag},
			"imagePullPolicy": "Never",
		},
	}
	vals := map[string]any{"webhook": webhook}
	for top, kv := range extra {
		m, ok := vals[top].(map[string]any)
		if !ok {
			m = map[string]any{}
			vals[top] = m
		}
		maps.Copy(m, kv)
	}
	return vals
}

// rendered returns the chart's objects for vals as two YAML streams: the
// CRDs, and everything else.
func rendered(t testing.TB, vals map[string]any) (crds, rest string) {
	t.Helper()
	objs, err := chart.Objects(chart.Options{ReleaseName: release, Namespace: releaseNamespace, Values: vals, IncludeCRDs: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	var c, r []string
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			c = append(c, string(b))
		} else {
			r = append(r, string(b))
		}
	}
	return strings.Join(c, "\n---\n"), strings.Join(r, "\n---\n")
}

// install applies what the chart renders for vals, as helm install or
// upgrade would: CRDs first (and waits for them), then the rest. A changed
// value rolls the webhook (the chart's config checksum), and install waits
// for the rollout.
func (e *env) install(t testing.TB, ctx context.Context, vals map[string]any) {
	t.Helper()
	crds, rest := rendered(t, vals)
	if _, err := e.kubectl(ctx, "", "get", "namespace", releaseNamespace); err != nil {
		e.must(t, ctx, "create", "namespace", releaseNamespace)
	}
	e.apply(t, ctx, crds)
	e.must(t, ctx, "wait", "--for", "condition=Established", "crd", "--all", "--timeout", "60s")
	e.apply(t, ctx, rest)
	e.must(t, ctx, "-n", releaseNamespace, "rollout", "status", "deployment/"+webhookName, "--timeout", "300s")
	// Replaced replicas keep serving the old values while they shut down
	// (the chart's shutdownDelay): wait until they are gone.
	want := e.must(t, ctx, "-n", releaseNamespace, "get", "deployment", webhookName, "-o", "jsonpath={.spec.replicas}")
	if err := eventually(ctx, 120*time.Second, func() error {
		pods, err := e.kubectl(ctx, "", "-n", releaseNamespace, "get", "pods", "-l", webhookSelector, "-o", "name")
		if n := len(strings.Fields(pods)); err != nil || fmt.Sprint(n) != want {
			return fmt.Errorf("%d webhook pods, want %s: %v", n, want, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// uninstall deletes what the chart rendered except its CRDs, which helm
// uninstall keeps too, and waits until the webhook's pods are gone.
func (e *env) uninstall(t testing.TB, ctx context.Context) {
	t.Helper()
	_, rest := rendered(t, baseValues(nil))
	if _, err := e.kubectl(ctx, rest, "delete", "--ignore-not-found", "--wait", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	_, err := e.kubectl(ctx, "", "-n", releaseNamespace, "wait", "--for", "delete", "pod", "-l", webhookSelector, "--timeout", "120s")
	if err != nil && !strings.Contains(err.Error(), "no matching resources") {
		t.Fatal(err)
	}
}
