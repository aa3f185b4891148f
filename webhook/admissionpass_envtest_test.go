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

package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/redirect"
	"github.com/meshinit/meshinit/webhook"
)

// TestOneAdmissionPass creates pods through a real admission chain (the API
// server's default plugins, PodSecurity and ServiceAccount among them, plus
// AlwaysPullImages) with each injector and each reinvocationPolicy, and
// reads from the API server's own metrics how often each pod create called
// the webhook or evaluated the mutating policy.
//
// Every injected pod comes out with meshinit-redirect first, mounting only
// its own empty directory at the token path (the ServiceAccount plugin gives
// it no token, in either round), with AlwaysPullImages' imagePullPolicy
// (which the injectors keep: AlwaysPullImages refuses a pod without it).
// A pod that does not opt in costs nothing. An opted-in pod without traffic
// annotations costs one call or evaluation: the API server runs its
// mutating chain again after an injector changed the pod, and reinvokes an
// IfNeeded injector (the webhook when something after it changed the pod,
// here AlwaysPullImages; the policy always), but the match condition
// not-injected skips a pod that already carries exactly what it would get.
// A pod with traffic annotations is judged by the injector itself, so with
// IfNeeded it costs a second call (only where something changed it after
// the webhook) or evaluation.
func TestOneAdmissionPass(t *testing.T) {
	c := startCluster(t, "enable-admission-plugins=AlwaysPullImages")
	ctx := context.Background()
	createNamespace(t, c.admin, "app", map[string]string{webhook.NamespaceLabel: "enabled", webhook.EnforceLabel: "privileged"})
	createNamespace(t, c.admin, "plain", nil)
	annotated := map[string]string{redirect.AnnotationExcludeInboundPorts: "8080"}
	cases := []struct {
		name, ns string
		pod      *corev1.Pod
		injected bool
		// calls is the calls or evaluations per create with reinvocationPolicy
		// IfNeeded, by mode; with Never every injected pod costs one.
		calls map[string]float64
	}{
		{"not opted in", "plain", testPod("p", nil, nil), false, nil},
		{"opted out", "app", testPod("p", map[string]string{webhook.PodLabel: "false"}, nil), false, nil},
		{"host network", "app", hostNetwork(testPod("p", nil, nil)), false, nil},
		{"opted in", "app", testPod("p", nil, nil), true, map[string]float64{"webhook": 1, "policy": 1}},
		{"opted in by label", "plain", testPod("p", map[string]string{webhook.PodLabel: "true"}, nil), true, map[string]float64{"webhook": 1, "policy": 1}},
		{"with a traffic annotation", "app", testPod("p", nil, annotated), true, map[string]float64{"webhook": 2, "policy": 2}},
	}
	modes := []string{"webhook"}
	if servesMAP(t, c) {
		modes = append(modes, "policy")
	}
	for _, mode := range modes {
		for _, reinvocation := range []string{"IfNeeded", "Never"} {
			t.Run(mode+", "+reinvocation, func(t *testing.T) {
				values := map[string]any{"webhook": map[string]any{"reinvocationPolicy": reinvocation}}
				calls := c.installInjector(t, mode, values)
				for _, tc := range cases {
					t.Run(tc.name, func(t *testing.T) {
						before := calls()
						p, err := c.admin.CoreV1().Pods(tc.ns).Create(ctx, tc.pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
						if err != nil {
							t.Fatal(err)
						}
						want := 0.0
						if tc.injected {
							want = 1
							if reinvocation == "IfNeeded" {
								want = tc.calls[mode]
							}
						}
						if got := calls() - before; got != want {
							t.Errorf("%v webhook calls or policy evaluations for one create, want %v", got, want)
						}
						if !tc.injected {
							if slices.Contains(initContainerNames(p), webhook.ContainerName) {
								t.Errorf("init containers %v, want no %s", initContainerNames(p), webhook.ContainerName)
							}
							return
						}
						assertOnePass(t, p)
					})
				}
				// A webhook called after meshinit's injector (mutating
				// policies run before every webhook, and webhooks in the
				// order of their configurations' names) that puts an init
				// container first: with IfNeeded the injector is called again
				// and moves its container back; with Never it stays second
				// (the RedirectPolicy refuses such a pod under placement
				// first; none is installed here).
				t.Run("a later webhook puts an init container first", func(t *testing.T) {
					mwcs := c.admin.AdmissionregistrationV1().MutatingWebhookConfigurations()
					later, err := mwcs.Create(ctx, laterPrependingWebhook(t), metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						if err := mwcs.Delete(ctx, later.Name, metav1.DeleteOptions{}); err != nil {
							t.Error(err)
						}
					})
					var p *corev1.Pod
					testkit.Eventually(t, 30*time.Second, "the later webhook in effect", func() error {
						p, err = c.admin.CoreV1().Pods("app").Create(ctx, testPod("p", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
						if err == nil && !slices.Contains(initContainerNames(p), "later") {
							err = fmt.Errorf("init containers %v", initContainerNames(p))
						}
						return err
					})
					before := calls()
					if p, err = c.admin.CoreV1().Pods("app").Create(ctx, testPod("p", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
						t.Fatal(err)
					}
					want, first := 2.0, webhook.ContainerName
					if reinvocation == "Never" {
						want, first = 1, "later"
					}
					if got := calls() - before; got != want {
						t.Errorf("%v calls or evaluations, want %v", got, want)
					}
					if names := initContainerNames(p); names[0] != first {
						t.Errorf("init containers %v, want %s first", names, first)
					}
				})
			})
		}
	}
}

func hostNetwork(p *corev1.Pod) *corev1.Pod {
	p.Spec.HostNetwork = true
	return p
}

// assertOnePass fails t unless p was injected as TestOneAdmissionPass
// expects: meshinit-redirect first, tokenless, pulled Always, the app's
// container holding its token.
func assertOnePass(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != webhook.ContainerName {
		t.Fatalf("init containers %v, want %s first", initContainerNames(p), webhook.ContainerName)
	}
	redirector := p.Spec.InitContainers[0]
	if len(redirector.VolumeMounts) != 1 || redirector.VolumeMounts[0].Name != webhook.TokenBlockVolume ||
		redirector.VolumeMounts[0].MountPath != webhook.ServiceAccountTokenPath || !redirector.VolumeMounts[0].ReadOnly {
		t.Errorf("%s mounts %+v, want only its read-only %s at %s", webhook.ContainerName, redirector.VolumeMounts, webhook.TokenBlockVolume, webhook.ServiceAccountTokenPath)
	}
	if redirector.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("%s imagePullPolicy %s, want AlwaysPullImages' Always", webhook.ContainerName, redirector.ImagePullPolicy)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == webhook.TokenBlockVolume && (v.EmptyDir == nil || *v.EmptyDir != (corev1.EmptyDirVolumeSource{})) {
			t.Errorf("volume %s: %+v, want an empty emptyDir", v.Name, v.VolumeSource)
		}
	}
	app := p.Spec.Containers[0]
	if len(app.VolumeMounts) == 0 || !strings.HasPrefix(app.VolumeMounts[0].Name, "kube-api-access-") {
		t.Errorf("the app container mounts %+v, want its API token (is the ServiceAccount plugin on?)", app.VolumeMounts)
	}
}

// installInjector installs the injector of mode ("webhook": webhook.Serve
// behind the chart's MutatingWebhookConfiguration; "policy": the chart's
// policies) with the chart's values, waits until it injects, and returns
// a function reading how many times the API server has called the webhook or
// evaluated the mutating policy. The test's cleanup removes it again.
func (c *cluster) installInjector(t *testing.T, mode string, values map[string]any) (calls func() float64) {
	t.Helper()
	ctx := context.Background()
	// Registered first, so it runs after the removals registered below.
	t.Cleanup(func() {
		testkit.Eventually(t, 60*time.Second, "no injector in effect", func() error {
			p, err := c.admin.CoreV1().Pods("app").Create(ctx, testPod("probe", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil || slices.Contains(initContainerNames(p), webhook.ContainerName) {
				return fmt.Errorf("probe pod: %v", err)
			}
			return nil
		})
	})
	cl, err := client.New(c.server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := charts.Options{Namespace: releaseNamespace, Values: values}
	if mode == "policy" {
		opts.Values = map[string]any{"injector": "policy", "webhook": values["webhook"]}
		opts.APIVersions = []string{mapAPI}
	}
	objs := charts.MustObjects(t, opts, false)
	status := statusOf(t, objs)
	if mode == "webhook" {
		saved := c.objects
		c.objects = objs
		t.Cleanup(func() { c.objects = saved })
		c.serveInCluster(t, 0)
		calls = func() float64 {
			return testkit.MetricSum(t, c.admin, "apiserver_admission_webhook_admission_duration_seconds_count", `type="admit"`, `inject.meshinit.io"`)
		}
	} else {
		for _, o := range objs {
			if strings.HasPrefix(o.GetName(), "meshinit-inject") && strings.HasPrefix(o.GetKind(), "Mutating") {
				if err := cl.Create(ctx, o); err != nil {
					t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
				t.Cleanup(func() {
					if err := cl.Delete(ctx, o); err != nil {
						t.Error(err)
					}
				})
			}
		}
		calls = func() float64 {
			return testkit.MetricSum(t, c.admin, "apiserver_mutating_admission_policy_check_duration_seconds_count", `policy="meshinit-inject"`)
		}
	}
	testkit.Eventually(t, 60*time.Second, "the "+mode+" injector in effect", func() error {
		p, err := c.admin.CoreV1().Pods("app").Create(ctx, testPod("probe", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if p.Annotations[webhook.StatusAnnotation] != status {
			return fmt.Errorf("probe pod status %q, want %q", p.Annotations[webhook.StatusAnnotation], status)
		}
		return nil
	})
	return calls
}

// laterPrependingWebhook serves a mutating webhook named to be called after
// meshinit's (webhooks are called in the order of their configurations'
// names) that adds init container "later" first to every pod without one.
func laterPrependingWebhook(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	return testkit.PatchingWebhook(t, "zz-prepend", &metav1.LabelSelector{MatchLabels: map[string]string{webhook.NamespaceLabel: "enabled"}}, func(object []byte) []byte {
		var p corev1.Pod
		if json.Unmarshal(object, &p) != nil || slices.Contains(initContainerNames(&p), "later") {
			return nil
		}
		return []byte(`[{"op":"add","path":"/spec/initContainers/0","value":{"name":"later","image":"later:1"}}]`)
	})
}
