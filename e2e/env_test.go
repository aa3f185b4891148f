package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/meshinit/meshinit/e2e/harness"
	"github.com/meshinit/meshinit/internal/poll"
)

// env is the cluster the tests run on, with meshinit's images loaded;
// its helpers fail the test instead of returning errors.
type env struct {
	*harness.Cluster
	images harness.Images
}

// setup returns the cluster KUBECONFIG names, or else brings up the local
// one, which it takes down when the test ends unless it was running
// before, and loads the images. It skips, saying why, when that cannot
// work here.
func setup(t testing.TB, ctx context.Context) *env {
	t.Helper()
	began := time.Now()
	c, err := harness.FromEnv(ctx, t.Logf)
	var unavailable *harness.Unavailable
	if errors.As(err, &unavailable) {
		t.Skip("skipped: " + unavailable.Reason)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("timing: cluster up %.1fs (started here: %v)", time.Since(began).Seconds(), c.StartedHere())
	if c.StartedHere() {
		t.Cleanup(func() {
			began := time.Now()
			if err := c.Down(context.Background()); err != nil {
				t.Errorf("cluster down: %v", err)
			}
			t.Logf("timing: cluster down %.1fs", time.Since(began).Seconds())
		})
	}
	imgs, err := c.LoadImages(ctx, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return &env{Cluster: c, images: imgs}
}

// must is kubectl that fails the test on error.
func (e *env) must(t testing.TB, ctx context.Context, args ...string) string {
	t.Helper()
	out, err := e.Kubectl(ctx, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies manifests server-side, failing the test on error.
func (e *env) apply(t testing.TB, ctx context.Context, manifests string, args ...string) string {
	t.Helper()
	out, err := e.Apply(ctx, manifests, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// install is helm upgrade --install with vals, failing the test on error.
func (e *env) install(t testing.TB, ctx context.Context, vals map[string]any) {
	t.Helper()
	if err := e.Install(ctx, vals); err != nil {
		t.Fatal(err)
	}
}

// uninstall is helm uninstall, failing the test on error.
func (e *env) uninstall(t testing.TB, ctx context.Context) {
	t.Helper()
	if err := e.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
}

// ready waits for the pod to be Ready and returns its IP.
func (e *env) ready(t testing.TB, ctx context.Context, ns, name string) string {
	t.Helper()
	ip, err := e.WaitReady(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// initContainers lists the names of a pod's init containers.
func (e *env) initContainers(t testing.TB, ctx context.Context, ns, name string) []string {
	t.Helper()
	names, err := e.InitContainers(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// dial returns the line addr answers a connection from a pod's container
// with.
func (e *env) dial(t testing.TB, ctx context.Context, ns, pod, container, addr string) string {
	t.Helper()
	line, err := e.Dial(ctx, ns, pod, container, addr)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// createNamespace creates a namespace with labels, deleted when the test
// ends.
func (e *env) createNamespace(t testing.TB, ctx context.Context, prefix string, labels map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)
	e.apply(t, ctx, harness.Namespace(name, labels))
	t.Cleanup(func() { _, _ = e.Kubectl(context.Background(), "", "delete", "namespace", name, "--wait=false") })
	return name
}

// eventually calls f every second until it returns nil or timeout passes,
// and returns its last error.
func eventually(ctx context.Context, timeout time.Duration, f func() error) error {
	return poll.Until(ctx, time.Second, timeout, func(context.Context) error { return f() })
}
