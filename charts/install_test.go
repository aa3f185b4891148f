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
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
)

// installRelease is the release TestInstall installs (in releaseNamespace).
const installRelease = "meshinit"

// TestInstall installs the chart with Helm's action package into a real
// kube-apiserver (envtest; no kubelet, so nothing runs): a server dry-run
// that creates nothing while the API server validates every object, a real
// install, and an uninstall after which the MutatingWebhookConfiguration,
// the ValidatingAdmissionPolicy and its bindings are gone and pods in an
// opted-in namespace are admitted again. The API server warns about
// nothing the chart renders for its version (such as the deprecated
// trafficDistribution PreferClose).
func TestInstall(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	// Helm's clients report the API server's warnings to the default
	// handler; the controller-runtime client below to its config's.
	var warnings bytes.Buffer // written under the handler's lock, read between requests
	warned := rest.NewWarningWriter(&warnings, rest.WarningWriterOptions{})
	takeWarnings := func() string {
		defer warnings.Reset()
		return warnings.String()
	}
	rest.SetDefaultWarningHandler(warned)
	t.Cleanup(func() { rest.SetDefaultWarningHandlerWithContext(rest.WarningLogger{}) })
	cfg := rest.CopyConfig(server.Config)
	cfg.WarningHandler = warned
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	helm, ch := newHelm(t, server)
	newInstall := func() *action.Install { return newInstall(helm) }

	t.Run("server dry-run", func(t *testing.T) {
		// Helm maps every object to an API before a dry-run and installs no
		// CRDs in one, so the RedirectPolicy CRD comes first (as on a
		// cluster where an earlier release installed it); the real install
		// then leaves it as it is.
		for _, crd := range ch.CRDObjects() {
			for _, o := range decodeManifest(t, string(crd.File.Data)) {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
		}
		testkit.Eventually(t, 30*time.Second, "the RedirectPolicy API served", func() error {
			_, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "meshinit.io", Kind: "RedirectPolicy"}, "v1alpha1")
			return err
		})
		in := newInstall()
		in.DryRun, in.DryRunOption = true, "server"
		rel, err := in.Run(ch, nil)
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeManifest(t, rel.Manifest)
		if len(objs) == 0 {
			t.Fatal("the dry-run rendered nothing")
		}
		assertAdmissionObjects(t, c, false)
		// Helm's dry-run only renders; the API server validates each object
		// (schemas, defaulting, VAP expressions) with dryRun=All.
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}); err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if err := c.Create(ctx, o, client.DryRunAll); err != nil {
				t.Errorf("server dry-run of %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
		assertAdmissionObjects(t, c, false)
	})
	if t.Failed() {
		return
	}

	app := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"meshinit.io/injection": "enabled"}}}
	testkit.Namespace(t, server.Config, app)
	newPod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: app.Name, GenerateName: "app-"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		}
	}

	t.Run("install", func(t *testing.T) {
		rel, err := newInstall().Run(ch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rel.Info.Status != "deployed" {
			t.Errorf("release status %s", rel.Info.Status)
		}
		assertAdmissionObjects(t, c, true)
		if w := takeWarnings(); w != "" {
			t.Errorf("the API server warned during the dry-run and install:\n%s", w)
		}
		// Helm rendered for the API server's version: PreferClose, the
		// default, under its new name from 1.35.
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: installRelease + "-webhook"}, &svc); err != nil {
			t.Fatal(err)
		}
		want := corev1.ServiceTrafficDistributionPreferSameZone
		if server.Minor < 35 {
			want = corev1.ServiceTrafficDistributionPreferClose
		}
		if got := ptr.Deref(svc.Spec.TrafficDistribution, ""); got != want {
			t.Errorf("Service trafficDistribution %q on Kubernetes 1.%d, want %q", got, server.Minor, want)
		}
		// The check above sees warnings: PreferClose gets one where
		// PreferSameZone replaces it (1.35 and newer; v1.34.4 gives none).
		preferClose := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "preferclose"},
			Spec: corev1.ServiceSpec{
				Ports:               []corev1.ServicePort{{Port: 443}},
				TrafficDistribution: ptr.To(corev1.ServiceTrafficDistributionPreferClose),
			},
		}
		if err := c.Create(ctx, preferClose, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if w := takeWarnings(); server.Minor >= 35 && !strings.Contains(w, "PreferClose") {
			t.Errorf("a Service with trafficDistribution PreferClose got warnings %q, want one about PreferClose", w)
		}
		// No webhook runs here and failurePolicy is Fail: an opted-in
		// namespace admits no pod until it does.
		testkit.Eventually(t, 30*time.Second, "pods refused in the opted-in namespace", func() error {
			if err := c.Create(ctx, newPod(), client.DryRunAll); err == nil {
				return errors.New("a pod was admitted in an opted-in namespace with the webhook unreachable")
			}
			return nil
		})
	})

	t.Run("uninstall", func(t *testing.T) {
		if _, err := action.NewUninstall(helm).Run(installRelease); err != nil {
			t.Fatal(err)
		}
		assertAdmissionObjects(t, c, false)
		// The API server notices removed admission configurations shortly.
		testkit.Eventually(t, 30*time.Second, "creating a pod in the opted-in namespace after uninstall", func() error { return c.Create(ctx, newPod()) })
	})
}

// newHelm is Helm's action configuration for the release namespace of
// server, and the chart.
func newHelm(t *testing.T, server *testkit.APIServer) (*action.Configuration, *chart.Chart) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &server.Kubeconfig
	ns := releaseNamespace
	flags.Namespace = &ns
	helm := new(action.Configuration)
	if err := helm.Init(flags, releaseNamespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	return helm, ch
}

// newInstall is `helm install` of the release in its namespace, created.
func newInstall(helm *action.Configuration) *action.Install {
	in := action.NewInstall(helm)
	in.ReleaseName, in.Namespace, in.CreateNamespace = installRelease, releaseNamespace, true
	in.Timeout = time.Minute
	return in
}

// assertAdmissionObjects checks that the chart's MutatingWebhookConfiguration,
// ValidatingAdmissionPolicies and their bindings exist (want) or not.
func assertAdmissionObjects(t *testing.T, c client.Client, want bool) {
	t.Helper()
	ctx := context.Background()
	sel := client.MatchingLabels{"app.kubernetes.io/instance": installRelease}
	var mwcs admissionregistrationv1.MutatingWebhookConfigurationList
	var vaps admissionregistrationv1.ValidatingAdmissionPolicyList
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	for _, l := range []client.ObjectList{&mwcs, &vaps, &bindings} {
		if err := c.List(ctx, l, sel); err != nil {
			t.Fatal(err)
		}
	}
	got := []int{len(mwcs.Items), len(vaps.Items), len(bindings.Items)}
	wantCounts := []int{0, 0, 0}
	if want {
		// The RedirectPolicy's policy and its four bindings (two scopes, each
		// for opted-in namespaces and for labelled pods elsewhere); the
		// caBundle's (webhook-cabundle-policy.yaml) and its binding; the
		// PodSecurity guard and its two bindings; the redirector trust's
		// policy and its three (trust-redirector.yaml).
		wantCounts = []int{1, 4, 10}
	}
	for i, what := range []string{"MutatingWebhookConfigurations", "ValidatingAdmissionPolicies", "ValidatingAdmissionPolicyBindings"} {
		if got[i] != wantCounts[i] {
			t.Errorf("%d %s of the release, want %d", got[i], what, wantCounts[i])
		}
	}
}

func decodeManifest(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := charts.Decode(manifest)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
