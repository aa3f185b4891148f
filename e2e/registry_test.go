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
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// TestImagesFromARegistry is the path for a cluster whose nodes the tests
// cannot reach (MESHINIT_E2E_REGISTRY): the images are pushed to a registry
// (here one in this process, which the local cluster's containerd reaches
// on loopback over HTTP), the chart is pointed at them, and the cluster
// pulls them: the webhook's pods run and an injected pod gets the pushed
// redirector image.
func TestImagesFromARegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	if !e.IsLocal() {
		t.Skip("skipped: the cluster's nodes must reach a registry in this process on loopback: local cluster only")
	}
	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	pulling := *e.Cluster
	pulling.Registry = strings.TrimPrefix(reg.URL, "http://") + "/meshinit"
	imgs, err := pulling.LoadImages(ctx, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(imgs.Redirector, pulling.Registry+"/redirector:") {
		t.Fatalf("redirector image %s, want it in %s", imgs.Redirector, pulling.Registry)
	}
	if err := pulling.Install(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.uninstall(t, context.Background()) })
	if got := e.must(t, ctx, "-n", releaseNamespace, "get", "pods", "-l", webhookSelector, "-o", "jsonpath={.items[*].spec.containers[0].image}"); !strings.HasPrefix(got, pulling.Registry+"/webhook:") {
		t.Errorf("webhook pods' images %q, want them from %s", got, pulling.Registry)
	}
	ns := e.createNamespace(t, ctx, "e2e-registry", map[string]string{injectionLabel: "enabled"})
	e.apply(t, ctx, imgs.PlainPod("pulled", nil, nil), "-n", ns)
	e.ready(t, ctx, ns, "pulled")
	want := []string{imgs.Redirector, imgs.TestApp}
	if got := strings.Fields(e.must(t, ctx, "-n", ns, "get", "pod", "pulled", "-o", "jsonpath={.spec.initContainers[*].image} {.spec.containers[*].image}")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("pod images %q, want %q", got, want)
	}
}
