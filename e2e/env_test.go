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

package e2e

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
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

// shared is the one cluster and images every test and benchmark of the
// package uses, set up by the first to ask (setup) and taken down by
// TestMain if it was started here.
var shared struct {
	once sync.Once
	env  *env
	err  error
}

// sharedLog is where setting up and taking down the shared cluster logs:
// it outlives the test that happened to set it up.
var sharedLog = log.New(os.Stderr, "e2e: ", log.Ltime|log.Lmsgprefix)

// setup returns the cluster KUBECONFIG names, or else brings up the local
// one, with the images loaded; the first call sets it up for all. It skips,
// saying why, when that cannot work here.
func setup(t testing.TB, ctx context.Context) *env {
	t.Helper()
	shared.once.Do(func() {
		began := time.Now()
		c, err := harness.FromEnv(ctx, sharedLog.Printf)
		if err != nil {
			shared.err = err
			return
		}
		shared.env = &env{Cluster: c}
		sharedLog.Printf("timing: cluster up %.1fs (started here: %v)", time.Since(began).Seconds(), c.StartedHere())
		dir, err := os.MkdirTemp("", "meshinit-e2e-images-")
		if err != nil {
			shared.err = err
			return
		}
		defer os.RemoveAll(dir)
		shared.env.images, shared.err = c.LoadImages(ctx, dir, sharedLog.Printf)
	})
	var unavailable *harness.Unavailable
	if errors.As(shared.err, &unavailable) {
		t.Skip("skipped: " + unavailable.Reason)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.env
}

// TestMain takes the local cluster down after the tests if they started it.
func TestMain(m *testing.M) {
	code := m.Run()
	if e := shared.env; e != nil && e.StartedHere() {
		began := time.Now()
		if err := e.Down(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "cluster down:", err)
			code = 1
		}
		sharedLog.Printf("timing: cluster down %.1fs", time.Since(began).Seconds())
	}
	os.Exit(code)
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
