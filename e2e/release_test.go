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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/e2e/harness"
	"github.com/meshinit/meshinit/internal/images"
	releases "github.com/meshinit/meshinit/internal/release"
	"github.com/meshinit/meshinit/webhook"
)

const (
	// crdName is the RedirectPolicy CRD.
	crdName = "redirectpolicies.meshinit.io"
	// trustCRDName is the RedirectorTrust CRD.
	trustCRDName = "redirectortrusts.meshinit.io"
	// markerField is the property release B's CRD schema adds to
	// RedirectPolicy's spec (and A's has not).
	markerField = "releaseTestMarker"
	// createEvery and maxCreates bound the pods created while Helm changes
	// the release: one every 500ms, at most 400 a phase.
	createEvery = 500 * time.Millisecond
	maxCreates  = 400
)

// crdNames are meshinit's CRDs, which Helm installs from the chart's crds/
// and leaves on uninstall.
var crdNames = []string{crdName, trustCRDName}

// published is one release as `make release` publishes it: its images,
// pushed by digest, and its chart pinned to them and pushed as an OCI
// artifact.
type published struct {
	version string
	images  map[string]releases.Image
	// status is what the injector of this version writes on the pods it
	// injects (meshinit.io/status: its container and its config file's
	// hash), read from the release's ConfigMap once it is installed.
	status string
}

// ref is how the chart names image n: by digest.
func (p published) ref(n string) string { return p.images[n].Repository + "@" + p.images[n].Digest }

// TestReleaseUpgradeRollback installs meshinit as a user would with only
// helm, from an OCI registry (go-containerregistry's, served on loopback;
// the test reaches it only through the registry API, as Helm and the
// node's containerd do), then upgrades, rolls back and uninstalls it while
// pods are being created.
//
// Two releases are built by internal/release, as make release builds one:
// A (1.0.0) from this tree; B (1.1.0) from the same tree at version 1.1.0,
// which compiles the new version into the webhook and redirector binaries
// and labels the images with it (so every image has a new digest, the
// webhook's Deployment rolls and injected pods get B's redirector), with
// one change the test makes to B's chart before PinChart: its RedirectPolicy
// CRD (crds/) has one more optional spec property (releaseTestMarker).
// Both are pushed by digest with their charts pinned, exactly as a release.
//
// Then, from an empty working directory and Helm home: helm install of A
// from oci://; its pods pull every image by the digest pushed; helm test
// (an injected pod redirected to its proxy) passes. helm upgrade to B and
// helm rollback to A each run while pods are created in an opted-in
// namespace every 500ms: every create is admitted, every pod is injected,
// by one version (A's or B's redirector by digest with that version's
// status, never a mix), the first by the old version and the last by the
// new; the policies trust both versions' redirector throughout (the
// RedirectorTrust the chart renders holds the target's as current, and the hook
// Job has written the one left as previous; the hook's objects are gone). Helm installs the CRD from the chart's crds/ on the first install
// and never changes it after, so before each upgrade and rollback the test
// takes the documented step (docs/install.md, "Upgrade"): the target
// version's crds/ applied with kubectl; the API server then accepts
// releaseTestMarker under B and refuses it under A. helm uninstall leaves
// no webhook configuration, policy or binding of meshinit, and a pod in the
// formerly opted-in namespace is created uninjected. The CRD stays, as
// Helm leaves the CRDs of crds/.
//
// It needs the local cluster (its containerd pulls from loopback over
// HTTP) and no meshinit release installed; it leaves the cluster as it
// found it (meshinit's CRDs as they were, or none).
func TestReleaseUpgradeRollback(t *testing.T) { testReleaseUpgradeRollback(t, "webhook") }

// TestReleaseUpgradeRollbackPolicyInjector is TestReleaseUpgradeRollback
// with injector policy: Helm changes the MutatingAdmissionPolicy and the
// ValidatingAdmissionPolicies in place, and there are no webhook pods.
func TestReleaseUpgradeRollbackPolicyInjector(t *testing.T) {
	testReleaseUpgradeRollback(t, "policy")
}

func testReleaseUpgradeRollback(t *testing.T, injector string) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	if !e.IsLocal() {
		t.Skip("skipped: the cluster's nodes must reach a registry in this process on loopback: local cluster only")
	}
	cfg, err := e.HelmConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := action.NewHistory(cfg).Run(harness.Release); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Fatalf("release %s/%s: %v: this test installs it itself; uninstall it first (helm uninstall -n %s %s)", harness.ReleaseNamespace, harness.Release, err, harness.ReleaseNamespace, harness.Release)
	}
	restore := e.keepClusterState(t, ctx)
	t.Cleanup(func() { restore(context.Background()) })

	// The registry, and a working directory and Helm home with nothing in
	// them: no checkout file is read from here on.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	prefix := host + "/meshinit"
	t.Cleanup(func() { e.removeImages(t, host) })
	build := t.TempDir()
	a := publish(t, ctx, prefix, "1.0.0", build, nil)
	b := publish(t, ctx, prefix, "1.1.0", build, addMarkerField)
	for _, n := range images.Names() {
		if a.images[n].Digest == b.images[n].Digest {
			t.Fatalf("image %s has the same digest in both releases (%s): B is no new build", n, a.images[n].Digest)
		}
	}
	home := t.TempDir()
	for _, v := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		t.Setenv(v, filepath.Join(home, strings.ToLower(v)))
	}
	t.Chdir(t.TempDir())
	rc, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RegistryClient = rc
	chartRef := "oci://" + prefix + "/charts/meshinit"

	client := e.clientset(t)
	began := time.Now()
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = harness.Release, harness.ReleaseNamespace, true
	in.Wait, in.Timeout, in.Version, in.PlainHTTP = true, 5*time.Minute, a.version, true
	policy := injector == "policy"
	var vals map[string]any // the chart's defaults, as a user's first install
	if policy {
		vals = map[string]any{"injector": "policy"}
	}
	if _, err := in.RunWithContext(ctx, pull(t, &in.ChartPathOptions, chartRef), vals); err != nil {
		t.Fatalf("helm install %s --version %s: %v", chartRef, a.version, err)
	}
	t.Cleanup(func() {
		if _, err := action.NewHistory(cfg).Run(harness.Release); err == nil {
			_ = e.Uninstall(context.Background())
		}
	})
	e.settled(t, ctx, policy)
	t.Logf("timing: helm install %s %.1fs", a.version, time.Since(began).Seconds())
	a.status = e.injectorStatus(t, ctx)
	e.pinnedPods(t, ctx, a, policy)
	e.helmTest(t, ctx, a)
	e.crdHasMarker(t, ctx, false)
	e.trusted(t, ctx, a, published{})

	ns := e.createNamespace(t, ctx, "e2e-release", map[string]string{harness.InjectionLabel: "enabled"})
	testApp := a.ref("test-app")

	began = time.Now()
	created := e.whileCreating(t, ctx, client, ns, "upgrade", testApp, func() {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.Wait, up.Timeout, up.Version, up.PlainHTTP = harness.ReleaseNamespace, true, 5*time.Minute, b.version, true
		ch := pull(t, &up.ChartPathOptions, chartRef)
		e.applyCRDs(t, ctx, ch)
		if _, err := up.RunWithContext(ctx, harness.Release, ch, vals); err != nil {
			t.Errorf("helm upgrade %s --version %s: %v", chartRef, b.version, err)
			return
		}
		e.settled(t, ctx, policy)
		b.status = e.injectorStatus(t, ctx)
	})
	t.Logf("timing: helm upgrade to %s %.1fs, %d pods created meanwhile", b.version, time.Since(began).Seconds(), len(created))
	if b.status == a.status {
		t.Fatalf("A and B inject with the same status %q: the pods cannot say which injected them", a.status)
	}
	checkVersions(t, "upgrade", created, a, b)
	e.trusted(t, ctx, b, a)
	e.pinnedPods(t, ctx, b, policy)
	e.crdHasMarker(t, ctx, true)
	e.helmTest(t, ctx, b)

	began = time.Now()
	created = e.whileCreating(t, ctx, client, ns, "rollback", testApp, func() {
		rb := action.NewRollback(cfg)
		rb.Version, rb.Wait, rb.Timeout = 1, true, 5*time.Minute
		back := action.NewUpgrade(cfg).ChartPathOptions // with cfg's registry client
		back.Version, back.PlainHTTP = a.version, true
		e.applyCRDs(t, ctx, pull(t, &back, chartRef))
		if err := rb.Run(harness.Release); err != nil {
			t.Errorf("helm rollback %s 1: %v", harness.Release, err)
			return
		}
		e.settled(t, ctx, policy)
		if got := e.injectorStatus(t, ctx); got != a.status {
			t.Errorf("after the rollback the injector's status is %q, want A's %q", got, a.status)
		}
	})
	t.Logf("timing: helm rollback to %s %.1fs, %d pods created meanwhile", a.version, time.Since(began).Seconds(), len(created))
	checkVersions(t, "rollback", created, b, a)
	e.trusted(t, ctx, a, b)
	e.pinnedPods(t, ctx, a, policy)
	e.crdHasMarker(t, ctx, false)

	began = time.Now()
	if err := e.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("timing: helm uninstall %.1fs", time.Since(began).Seconds())
	var left []string
	for _, kind := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		out, err := e.Kubectl(ctx, "", "get", kind, "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range strings.Fields(out) {
			if strings.Contains(o, "meshinit") {
				left = append(left, o)
			}
		}
	}
	left = append(left, e.trustObjects(ctx, append([]string{"redirectortrust"}, trustHookKinds...)...)...)
	if len(left) > 0 {
		t.Errorf("helm uninstall left %v", left)
	}
	for _, name := range crdNames {
		if _, err := e.Kubectl(ctx, "", "get", "crd", name); err != nil {
			t.Errorf("helm uninstall removed the CRD %s (Helm leaves the CRDs of crds/): %v", name, err)
		}
	}
	var p *corev1.Pod
	err = eventually(ctx, 30*time.Second, func() error {
		p, err = client.CoreV1().Pods(ns).Create(ctx, steadyPod("after-uninstall", testApp), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("after helm uninstall a pod in the formerly opted-in namespace %s is not created: %v", ns, err)
	}
	if len(p.Spec.InitContainers) != 0 || p.Annotations[harness.StatusAnnotation] != "" {
		t.Errorf("after helm uninstall a pod was injected: init containers %v, status %q", p.Spec.InitContainers, p.Annotations[harness.StatusAnnotation])
	}
}

// trustName names the RedirectorTrust of the redirector images the
// policies trust and the hook objects that write it (release "meshinit").
const trustName = "meshinit-redirector-trust"

// trusted checks that the policies trust current's redirector image and
// previous's (none when previous is the zero value), as the RedirectorTrust
// the chart renders (current) and its hook Job writes (previous) say, and that
// the hook left nothing behind: its Job, ServiceAccount, Role and
// RoleBinding go once it has succeeded.
func (e *env) trusted(t *testing.T, ctx context.Context, current, previous published) {
	t.Helper()
	out, err := e.Kubectl(ctx, "", "-n", harness.ReleaseNamespace, "get", "redirectortrust", trustName, "-o", "jsonpath={.spec}")
	if err != nil {
		t.Errorf("the trusted redirector images: %v", err)
		return
	}
	var data map[string]string
	if err := json.Unmarshal([]byte(out), &data); err != nil {
		t.Errorf("RedirectorTrust %s spec %q: %v", trustName, out, err)
		return
	}
	want := map[string]string{"current": current.ref("redirector")}
	if previous.version != "" {
		want["previous"] = previous.ref("redirector")
	}
	if !maps.Equal(data, want) {
		t.Errorf("RedirectorTrust %s holds %v, want %v", trustName, data, want)
	}
	if left := e.trustObjects(ctx, trustHookKinds...); len(left) > 0 {
		t.Errorf("the trust hook left %v", left)
	}
}

// trustHookKinds are the kinds of the trust hook's objects, all named
// trustName: its Job and the rights it runs with.
var trustHookKinds = []string{"job", "serviceaccount", "role", "rolebinding"}

// trustObjects returns the objects named trustName of these kinds that are
// in the release namespace (and the errors of looking).
func (e *env) trustObjects(ctx context.Context, kinds ...string) []string {
	var out []string
	for _, kind := range kinds {
		if o, err := e.Kubectl(ctx, "", "-n", harness.ReleaseNamespace, "get", kind, trustName, "-o", "name", "--ignore-not-found"); err != nil || o != "" {
			out = append(out, fmt.Sprintf("%s %s (%v)", kind, o, err))
		}
	}
	return out
}

// publish builds and pushes release version as make release does
// (internal/release), for the host's architecture only; change, if not
// nil, changes the chart first.
func publish(t *testing.T, ctx context.Context, prefix, version, dir string, change func(*testing.T, *chart.Chart)) published {
	t.Helper()
	began := time.Now()
	pushed, err := releases.PushImages(ctx, prefix, version, filepath.Join(dir, version, "images"), []string{runtime.GOARCH}, images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(t, ch)
	}
	if err := releases.PinChart(ch, version, pushed); err != nil {
		t.Fatal(err)
	}
	file, err := releases.PackageChart(ch, filepath.Join(dir, version, "chart"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := releases.PushChart(file, prefix+"/charts")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("timing: release %s built and pushed in %.1fs: chart %s", version, time.Since(began).Seconds(), ref)
	return published{version: version, images: pushed}
}

// addMarkerField is release B's change: its CRD's schema has one more
// optional property in RedirectPolicy's spec.
func addMarkerField(t *testing.T, ch *chart.Chart) {
	t.Helper()
	const name = "crds/meshinit.io_redirectpolicies.yaml"
	i := slices.IndexFunc(ch.Files, func(f *chart.File) bool { return f.Name == name })
	if i < 0 {
		t.Fatalf("chart has no %s", name)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(ch.Files[i].Data, &crd); err != nil {
		t.Fatal(err)
	}
	at := func(m any, keys ...any) any {
		for _, k := range keys {
			switch k := k.(type) {
			case string:
				m = m.(map[string]any)[k]
			case int:
				m = m.([]any)[k]
			}
		}
		return m
	}
	props := at(crd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties").(map[string]any)
	props[markerField] = map[string]any{"type": "string", "description": "release B's schema change (TestReleaseUpgradeRollback)"}
	data, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	ch.Files[i].Data = data
}

// pull is what `helm install/upgrade oci://... --version` does before
// installing: the chart pulled from the registry into Helm's cache (here
// empty, under the test's HELM_CACHE_HOME) and loaded from there.
func pull(t *testing.T, o *action.ChartPathOptions, ref string) *chart.Chart {
	t.Helper()
	path, err := o.LocateChart(ref, cli.New())
	if err != nil {
		t.Fatalf("helm pull %s --version %s: %v", ref, o.Version, err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != o.Version {
		t.Fatalf("pulled chart %s is version %s, want %s", ref, ch.Metadata.Version, o.Version)
	}
	return ch
}

// applyCRDs is the step docs/install.md gives before helm upgrade and
// helm rollback, which never change a CRD of the chart's crds/: the target
// chart pulled and untarred (here: its crds/ written as helm pull --untar
// writes them, into the empty working directory) and applied with
// kubectl apply --server-side --force-conflicts -f meshinit/crds/.
func (e *env) applyCRDs(t *testing.T, ctx context.Context, ch *chart.Chart) {
	t.Helper()
	dir := filepath.Join(ch.Metadata.Version, ch.Name(), "crds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	crds := ch.CRDObjects()
	if len(crds) == 0 {
		t.Fatalf("chart %s has no crds/", ch.Metadata.Version)
	}
	for _, c := range crds {
		if err := os.WriteFile(filepath.Join(ch.Metadata.Version, c.Filename), c.File.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.must(t, ctx, "apply", "--server-side", "--force-conflicts", "-f", dir)
}

// settled waits until the release's injector injects with its
// configuration: the webhook's pods Ready and the replaced ones gone, or
// (policy) the API server injecting.
func (e *env) settled(t *testing.T, ctx context.Context, policy bool) {
	t.Helper()
	if err := e.WaitInjecting(ctx, policy); err != nil {
		t.Fatal(err)
	}
}

// injectorStatus is the meshinit.io/status the installed release's
// injector writes: its init container and the hash of the config file its
// ConfigMap holds.
func (e *env) injectorStatus(t *testing.T, ctx context.Context) string {
	t.Helper()
	out := e.must(t, ctx, "-n", harness.ReleaseNamespace, "get", "configmap", harness.WebhookName, "-o", "json")
	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatal(err)
	}
	return webhook.Status{InitContainers: []string{harness.RedirectName}, Config: webhook.ConfigHash([]byte(cm.Data["config.yaml"]))}.String()
}

// pinnedPods checks that every pod of the release names its images by the
// digests release p pushed (so the node pulls them by digest).
func (e *env) pinnedPods(t *testing.T, ctx context.Context, p published, policy bool) {
	t.Helper()
	pods, err := e.clientset(t).CoreV1().Pods(harness.ReleaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + harness.Release})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 && !policy {
		t.Fatalf("no pod of release %s", harness.Release)
	}
	if len(pods.Items) > 0 && policy {
		t.Errorf("injector policy, but release %s has %d pods", harness.Release, len(pods.Items))
	}
	want := map[string]bool{}
	for _, n := range images.Names() {
		want[p.ref(n)] = true
	}
	for _, pod := range pods.Items {
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if !want[c.Image] {
				t.Errorf("pod %s container %s: image %s, want one release %s pushed, by digest (@sha256:...)", pod.Name, c.Name, c.Image, p.version)
			}
		}
	}
}

// helmTest runs the chart's helm test: an injected pod's connection reaches
// its proxy.
func (e *env) helmTest(t *testing.T, ctx context.Context, p published) {
	t.Helper()
	began := time.Now()
	if err := e.HelmTest(ctx); err != nil {
		t.Fatalf("release %s: %v", p.version, err)
	}
	t.Logf("timing: helm test of %s %.1fs", p.version, time.Since(began).Seconds())
}

// crdHasMarker checks that the API server's RedirectPolicy schema has
// release B's property (want) or not: a RedirectPolicy setting it is
// accepted, or refused as an unknown field.
func (e *env) crdHasMarker(t *testing.T, ctx context.Context, want bool) {
	t.Helper()
	rp := fmt.Sprintf("apiVersion: meshinit.io/v1alpha1\nkind: RedirectPolicy\nmetadata:\n  name: marker\n  namespace: default\nspec:\n  %s: b\n", markerField)
	// The API server serves a changed schema a moment after the CRD is
	// updated.
	err := eventually(ctx, 30*time.Second, func() error {
		_, err := e.Kubectl(ctx, rp, "create", "--dry-run=server", "--validate=strict", "-f", "-")
		switch {
		case want && err != nil:
			return fmt.Errorf("a RedirectPolicy with spec.%s is refused, want B's schema: %w", markerField, err)
		case !want && err == nil:
			return fmt.Errorf("a RedirectPolicy with spec.%s is accepted, want A's schema (no such field)", markerField)
		case !want && !strings.Contains(err.Error(), markerField):
			return fmt.Errorf("a RedirectPolicy with spec.%s is refused, but not for the field: %w", markerField, err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// created is one pod created while Helm changed the release.
type created struct {
	name, image, status string
	at                  time.Time
	err                 error
}

// whileCreating creates a pod in ns every createEvery (at most maxCreates)
// while change runs, and for 10s after, and returns every create's
// outcome in order. The pods never run (a scheduling gate holds them):
// what is checked is what admission made of them.
func (e *env) whileCreating(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, phase, image string, change func()) []created {
	t.Helper()
	var (
		mu   sync.Mutex
		out  []created
		wg   sync.WaitGroup
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(createEvery)
		defer tick.Stop()
		for i := 0; i < maxCreates; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				c := created{name: fmt.Sprintf("%s-%03d", phase, i), at: time.Now()}
				p, err := client.CoreV1().Pods(ns).Create(cctx, steadyPod(c.name, image), metav1.CreateOptions{})
				c.err = err
				if err == nil {
					c.status = p.Annotations[harness.StatusAnnotation]
					for _, ic := range p.Spec.InitContainers {
						if ic.Name == harness.RedirectName {
							c.image = ic.Image
						}
					}
				}
				mu.Lock()
				out = append(out, c)
				mu.Unlock()
			}(i)
		}
	}()
	// A few pods before the change, a few after.
	time.Sleep(3 * time.Second)
	change()
	time.Sleep(10 * time.Second)
	close(stop)
	<-done
	wg.Wait()
	slices.SortFunc(out, func(x, y created) int { return strings.Compare(x.name, y.name) })
	return out
}

// checkVersions checks the pods created while Helm went from release from
// to release to (versionProblems).
func checkVersions(t *testing.T, phase string, pods []created, from, to published) {
	t.Helper()
	counts, problems := versionProblems(pods, from, to)
	t.Logf("%s: %d pods, injected by %v", phase, len(pods), counts)
	for _, p := range problems {
		t.Errorf("%s: %s", phase, p)
	}
}

// versionProblems: at least 10 pods created, every create admitted, every
// pod injected by one of the two releases (its redirector image and its
// status both that release's), the first by from and the last by to. It
// returns how many pods each release injected and what is wrong: refusals
// and pods of neither release counted, with the first and the last of
// each, so that a window of refusals reads as one.
func versionProblems(pods []created, from, to published) (counts map[string]int, problems []string) {
	var refused, neither []string
	if len(pods) < 10 {
		problems = append(problems, fmt.Sprintf("only %d pods created", len(pods)))
	}
	counts = map[string]int{}
	var versions []string
	for _, p := range pods {
		switch {
		case p.err != nil:
			refused = append(refused, fmt.Sprintf("pod %s (created at %s): %v", p.name, p.at.Format("15:04:05.000"), p.err))
		case p.image == from.ref("redirector") && p.status == from.status:
			versions = append(versions, from.version)
		case p.image == to.ref("redirector") && p.status == to.status:
			versions = append(versions, to.version)
		default:
			neither = append(neither, fmt.Sprintf("pod %s: redirector %q, status %q", p.name, p.image, p.status))
		}
	}
	for _, v := range versions {
		counts[v]++
	}
	summary := func(what string, list []string) {
		switch len(list) {
		case 0:
		case 1:
			problems = append(problems, fmt.Sprintf("1 of %d pods %s: %s", len(pods), what, list[0]))
		default:
			problems = append(problems, fmt.Sprintf("%d of %d pods %s; the first: %s; the last: %s", len(list), len(pods), what, list[0], list[len(list)-1]))
		}
	}
	summary("refused", refused)
	summary(fmt.Sprintf("injected by neither release %s (%s, %s) nor %s (%s, %s)", from.version, from.ref("redirector"), from.status, to.version, to.ref("redirector"), to.status), neither)
	if len(versions) > 0 && (versions[0] != from.version || versions[len(versions)-1] != to.version) {
		problems = append(problems, fmt.Sprintf("the first pod injected by %s and the last by %s, want %s then %s", versions[0], versions[len(versions)-1], from.version, to.version))
	}
	return counts, problems
}

// steadyPod is a pod that runs as its own user with no capabilities (what
// the chart's default RedirectPolicy, interception Required, asks of pods
// in opted-in namespaces), held by a scheduling gate so that it never
// runs.
func steadyPod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "meshinit.io/e2e-never-scheduled"}},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: image,
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                ptr.To[int64](1000),
					RunAsGroup:               ptr.To[int64](1000),
					RunAsNonRoot:             ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// clientset is a client of the cluster.
func (e *env) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfigOrDie(cfg)
}

// keepClusterState notes what the test changes beyond its own namespaces
// (meshinit's CRDs, the release namespace) and returns what puts them back:
// each CRD as it was (spec, labels, annotations) or deleted if there was
// none, the release namespace deleted if there was none.
func (e *env) keepClusterState(t *testing.T, ctx context.Context) func(context.Context) {
	t.Helper()
	var restores []func(context.Context)
	for _, name := range crdNames {
		restores = append(restores, e.keepCRD(t, ctx, name))
	}
	_, nsErr := e.Kubectl(ctx, "", "get", "namespace", harness.ReleaseNamespace)
	if nsErr != nil && !strings.Contains(nsErr.Error(), "NotFound") {
		t.Fatal(nsErr)
	}
	return func(ctx context.Context) {
		for _, restore := range restores {
			restore(ctx)
		}
		if nsErr != nil {
			_, _ = e.Kubectl(ctx, "", "delete", "namespace", harness.ReleaseNamespace, "--wait=false", "--ignore-not-found")
		}
	}
}

// keepCRD notes the CRD name and returns what puts it back as it was, or
// deletes it if there was none.
func (e *env) keepCRD(t *testing.T, ctx context.Context, name string) func(context.Context) {
	t.Helper()
	crd, crdErr := e.Kubectl(ctx, "", "get", "crd", name, "-o", "json")
	if crdErr != nil && !strings.Contains(crdErr.Error(), "NotFound") {
		t.Fatal(crdErr)
	}
	return func(ctx context.Context) {
		if crdErr != nil {
			if _, err := e.Kubectl(ctx, "", "delete", "crd", name, "--ignore-not-found"); err != nil {
				t.Errorf("cleanup: %v", err)
			}
			return
		}
		var was struct {
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal([]byte(crd), &was); err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		orEmpty := func(m map[string]string) map[string]string {
			if m == nil {
				return map[string]string{}
			}
			return m
		}
		patch, _ := json.Marshal([]map[string]any{
			{"op": "add", "path": "/metadata/labels", "value": orEmpty(was.Metadata.Labels)},
			{"op": "add", "path": "/metadata/annotations", "value": orEmpty(was.Metadata.Annotations)},
			{"op": "replace", "path": "/spec", "value": was.Spec},
		})
		if _, err := e.Kubectl(ctx, "", "patch", "crd", name, "--type=json", "-p", string(patch)); err != nil {
			t.Errorf("cleanup: restoring the CRD %s as it was: %v", name, err)
		}
	}
}

// removeImages removes from the node's containerd the images it pulled
// from the test's registry at host (gone with the test).
func (e *env) removeImages(t *testing.T, host string) {
	out, err := ctrImages(e.Containerd)
	if err != nil {
		t.Logf("cleanup: listing containerd's images: %v", err)
		return
	}
	var refs []string
	for _, r := range strings.Fields(out) {
		if strings.HasPrefix(r, host+"/") {
			refs = append(refs, r)
		}
	}
	if len(refs) > 0 {
		if out, err := ctr(e.Containerd, append([]string{"images", "rm"}, refs...)...); err != nil {
			t.Logf("cleanup: removing %d images: %v: %s", len(refs), err, out)
		}
	}
}

// ctrImages lists the references of the node's containerd's images (the
// Kubernetes namespace).
func ctrImages(socket string) (string, error) { return ctr(socket, "images", "ls", "-q") }

// ctr runs ctr against the node's containerd.
func ctr(socket string, args ...string) (string, error) {
	cmd := exec.Command("ctr", append([]string{"--address", socket, "-n", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestVersionProblems: versionProblems finds each kind of problem, and
// none in a clean switch from one release to the other (no cluster).
func TestVersionProblems(t *testing.T) {
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	a := published{version: "1.0.0", status: "a", images: map[string]releases.Image{"redirector": {Repository: "r/redirector", Digest: digest("a")}}}
	b := published{version: "1.1.0", status: "b", images: map[string]releases.Image{"redirector": {Repository: "r/redirector", Digest: digest("b")}}}
	pod := func(i int, p published) created {
		return created{name: fmt.Sprintf("p-%03d", i), image: p.ref("redirector"), status: p.status}
	}
	clean := func() []created {
		var pods []created
		for i := range 12 {
			pods = append(pods, pod(i, map[bool]published{true: a, false: b}[i < 6]))
		}
		return pods
	}
	for _, tc := range []struct {
		name   string
		change func([]created) []created
		want   []string
	}{
		{"a clean switch", func(p []created) []created { return p }, nil},
		{"too few", func(p []created) []created { return p[:5] }, []string{"only 5 pods created"}},
		{"refusals", func(p []created) []created {
			p[6].err, p[7].err = errors.New("denied six"), errors.New("denied seven")
			return p
		}, []string{"2 of 12 pods refused; the first: pod p-006", "denied six", "the last: pod p-007", "denied seven"}},
		{"one release's image refused as not the other's", func(p []created) []created {
			p[6].err = fmt.Errorf("admission webhook denied: init container meshinit-redirect is not meshinit's: its image %q is not %q", a.ref("redirector"), b.ref("redirector"))
			return p
		}, []string{"1 of 12 pods refused: pod p-006", "its image"}},
		{"a mix", func(p []created) []created { p[3].status = b.status; return p }, []string{"1 of 12 pods injected by neither", "pod p-003"}},
		{"the wrong way round", func(p []created) []created { slices.Reverse(p); return p }, []string{"the first pod injected by 1.1.0 and the last by 1.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := versionProblems(tc.change(clean()), a, b)
			got := strings.Join(problems, "\n")
			if len(tc.want) == 0 && got != "" {
				t.Errorf("problems %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("problems %q, want %q in them", got, w)
				}
			}
		})
	}
}
