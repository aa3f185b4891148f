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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/charts"
)

// helmTestObjects renders the chart's `helm test` namespace and pod, the
// pod injected by the webhook with the same values.
func helmTestObjects(t *testing.T, values map[string]any) (*corev1.Namespace, *corev1.Pod) {
	t.Helper()
	objs := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: values}, true)
	var ns corev1.Namespace
	var p corev1.Pod
	charts.DecodeOne(t, objs, "Namespace", "", &ns)
	charts.DecodeOne(t, objs, "Pod", "", &p)
	in, err := newInjector(values)
	if err != nil {
		t.Fatal(err)
	}
	injected, err := in.inject(&p)
	if err != nil {
		t.Fatal(err)
	}
	return &ns, injected
}

// TestPolicyAdmitsHelmTestPod: the chart's `helm test` pod, once injected, passes the
// policy with the chart's defaults (its proxy runs as the proxy UID and is
// trusted for its name, image and arguments in the test's own namespace),
// in-process, and on a real API server under the test RedirectPolicies
// (which require outbound port 5432). With tests disabled its proxy is no
// longer trusted (interception Required), nor in any other namespace.
func TestPolicyAdmitsHelmTestPod(t *testing.T) {
	ns, p := helmTestObjects(t, nil)
	params := chartDefaultRedirectPolicy(t)
	if denied := compile(t, chartPolicy(t, nil)).denials(t, request{object: p, namespace: ns, params: params}); len(denied) != 0 {
		t.Errorf("the chart's defaults refuse its own helm test pod: %q", denied)
	}
	disabled := map[string]any{"tests": map[string]any{"enabled": false}}
	required := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	denied := compile(t, chartPolicy(t, disabled)).denials(t, request{object: p, namespace: ns, params: required})
	want := strings.ReplaceAll(msgMust("meshinit-system/default", "every port (interception: Required)", "proxy", 0, fixUID, fixGID), "SUBJECT", "pod")
	if len(denied) != 1 || denied[0] != want {
		t.Errorf("with tests disabled, the helm test pod's proxy is still recognised: %q", denied)
	}

	c := apiServer(t)
	if err := c.client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.checkVerdict(ns.Name, p, verdict{}); err != nil {
		t.Error(err)
	}
	elsewhere := strings.ReplaceAll(msgDefaultMust("proxy", fixUID, fixGID), "SUBJECT", "pod")
	if err := c.checkVerdict("team-a", p, verdict{clusterBinding, elsewhere, metav1.StatusReasonForbidden}); err != nil {
		t.Error(err)
	}
}

// chartDefaultRedirectPolicy is the RedirectPolicy the chart creates with
// its default values.
func chartDefaultRedirectPolicy(t *testing.T) runtime.Object {
	t.Helper()
	found := charts.Find(chartPolicyObjects(t, nil), "RedirectPolicy", "")
	if len(found) != 1 {
		t.Fatalf("the chart renders %d RedirectPolicies, want 1", len(found))
	}
	found[0].SetNamespace(releaseNamespace)
	return found[0]
}
