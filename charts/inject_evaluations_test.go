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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestPolicyInjectorEvaluations counts, on a real API server with its
// default admission plugins (ServiceAccount included), how often one pod
// create evaluates the mutating policy and how often the API server runs its
// mutating admission chain.
//
// The API server runs the chain a second time after any mutating policy was
// evaluated, and in that round re-evaluates every policy with
// reinvocationPolicy IfNeeded that it evaluated (k8s.io/apiserver
// plugin/policy/mutating/dispatcher.go: each evaluation marks the object
// dirty, whatever the patch). The policy's match condition not-injected
// skips a pod that carries exactly what the policy gives it, so an injected
// pod without traffic annotations is evaluated once; one with them (whose
// container the match condition cannot judge without the evaluation) twice.
// meshinit-redirect brings its own mount at the token path, so the
// ServiceAccount plugin never gives it a token in either round. A pod the
// policy leaves alone costs no evaluation: the bindings (the webhook's
// selectors) and the pod-network match condition keep the policy from being
// evaluated at all.
func TestPolicyInjectorEvaluations(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	if !policyInjectorServed(t, server) {
		return
	}
	admin := kubernetes.NewForConfigOrDie(server.Config)
	for _, ns := range []*corev1.Namespace{namespace(releaseNamespace), namespace("app", namespaceLabel, "enabled"), namespace("plain")} {
		testkit.Namespace(t, server.Config, ns)
	}
	cl, err := client.New(server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{APIServer: server, client: cl}
	for _, o := range renderMode(t, nil, "policy") {
		if strings.HasPrefix(o.GetName(), injectName) && strings.Contains(o.GetKind(), "AdmissionPolicy") {
			c.apply(t, o)
		}
	}
	testkit.Eventually(t, 30*time.Second, "the policy injector in effect", func() error {
		p := pod("probe")
		if err := c.createDryRun("app", p); err != nil || len(p.Spec.InitContainers) == 0 {
			return fmt.Errorf("probe pod not injected: %v", err)
		}
		return nil
	})
	for _, tc := range []struct {
		name        string
		ns          string
		pod         *corev1.Pod
		evaluations float64 // of the mutating policy
		rounds      float64 // of the mutating admission chain
	}{
		{"not opted in", "plain", pod("p"), 0, 1},
		{"opted out by label", "app", pod("p", labels(podLabel, "false")), 0, 1},
		{"host network", "app", pod("p", func(p *corev1.Pod) { p.Spec.HostNetwork = true }), 0, 1},
		{"opted in by namespace", "app", pod("p"), 1, 2},
		{"opted in by label", "plain", pod("p", labels(podLabel, "true")), 1, 2},
		{"with a traffic annotation", "app", pod("p", annotations(excludeInbound, "8080")), 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evaluations, rounds := admissionCounts(t, admin)
			p := tc.pod.DeepCopy()
			if err := c.createDryRun(tc.ns, p); err != nil {
				t.Fatal(err)
			}
			e, r := admissionCounts(t, admin)
			if e-evaluations != tc.evaluations || r-rounds != tc.rounds {
				t.Errorf("evaluations of %s %v, mutating admission rounds %v; want %v and %v", injectName, e-evaluations, r-rounds, tc.evaluations, tc.rounds)
			}
			if len(p.Spec.Containers[0].VolumeMounts) == 0 && !p.Spec.HostNetwork {
				t.Errorf("the app container has no API token mounted: the ServiceAccount plugin is off, and the test checks too little")
			}
			if injected := len(p.Spec.InitContainers) > 0; injected != (tc.evaluations > 0) {
				t.Fatalf("injected %v", injected)
			}
			if tc.evaluations > 0 {
				assertTokenless(t, p)
			}
		})
	}
}

// admissionCounts reads the API server's metrics: the evaluations of the
// policy injector's mutating policy (all bindings) and the runs of the
// ServiceAccount plugin's mutation, one a round of the mutating chain.
func admissionCounts(t *testing.T, admin *kubernetes.Clientset) (evaluations, rounds float64) {
	t.Helper()
	return testkit.MetricSum(t, admin, "apiserver_mutating_admission_policy_check_duration_seconds_count", `policy="`+injectName+`"`),
		testkit.MetricSum(t, admin, "apiserver_admission_controller_admission_duration_seconds_count",
			`name="ServiceAccount"`, `operation="CREATE"`, `type="admit"`)
}

// assertTokenless fails t unless p's first init container is
// meshinit-redirect, mounting only its own empty directory at the token path
// (no API token), and that directory is the pod's empty volume of that name.
func assertTokenless(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != initContainerName {
		t.Fatalf("init containers %v: want %s first", p.Spec.InitContainers, initContainerName)
	}
	want := []corev1.VolumeMount{{Name: tokenVolume, MountPath: tokenPath, ReadOnly: true}}
	if got := p.Spec.InitContainers[0].VolumeMounts; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s mounts %+v, want %+v", initContainerName, got, want)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == tokenVolume && (v.EmptyDir == nil || v.Projected != nil || v.Secret != nil) {
			t.Errorf("volume %s is %+v, want an empty emptyDir", tokenVolume, v.VolumeSource)
		}
	}
}

// The volume meshinit-redirect mounts at the service-account token path.
const (
	tokenVolume = "meshinit-no-api-token"
	tokenPath   = "/var/run/secrets/kubernetes.io/serviceaccount"
)
