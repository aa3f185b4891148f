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

package kubectlplugin

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/webhook"
)

// parseConfig is the webhook's configuration from a config.yaml.
func parseConfig(t testing.TB, yaml string) *webhook.Config {
	t.Helper()
	c, err := webhook.ParseConfig([]byte(yaml), "meshinit-system")
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

var (
	enabled  = map[string]string{webhook.NamespaceLabel: "enabled"}
	baseline = map[string]string{webhook.NamespaceLabel: "enabled", webhook.EnforceLabel: "baseline"}
	disabled = map[string]string{webhook.NamespaceLabel: "disabled"}
)

// appPod is a pod in namespace app, changed by each change.
func appPod(name string, change ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	for _, c := range change {
		c(p)
	}
	return p
}

func labelled(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func annotated(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

// injectedBy is pod as the webhook admits it under cfg: Review's patch
// applied.
func injectedBy(t testing.TB, pod *corev1.Pod, namespaceLabels map[string]string, cfg *webhook.Config) *corev1.Pod {
	t.Helper()
	r := webhook.Review(pod, pod.Namespace, namespaceLabels, cfg)
	if r.Outcome != webhook.OutcomeInjected {
		t.Fatalf("review of %s: %s, want injected", pod.Name, r.Outcome)
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := json.Marshal(r.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = patch.Apply(raw); err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestClassifyPod(t *testing.T) {
	cfg := parseConfig(t, "image: redirector:1\n")
	excludes22 := parseConfig(t, "image: redirector:1\nredirect: {exclude-outbound-ports: \"22\"}\n")
	newImage := parseConfig(t, "image: redirector:2\n")
	current := injectedBy(t, appPod("web"), enabled, cfg)
	moved := current.DeepCopy()
	moved.Spec.InitContainers = append([]corev1.Container{{Name: "migrate", Image: "migrate:1"}}, moved.Spec.InitContainers...)
	forgedOptOut := appPod("forged", labelled(webhook.PodLabel, "false"))
	forgedOptOut.Spec.InitContainers = []corev1.Container{{Name: webhook.ContainerName, Image: "busybox"}}

	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		nsLabels  map[string]string
		cfg       *webhook.Config
		state     PodState
		why       string
		problem   bool
		detail    string
		container bool // the canonical container is returned
	}{
		{name: "injected as the configuration injects it", pod: current, nsLabels: enabled, cfg: cfg,
			state: StateCurrent, detail: "as the installed configuration injects it", container: true},
		{name: "settings changed since", pod: current, nsLabels: enabled, cfg: excludes22,
			state: StateStale, problem: true, detail: `--exclude-outbound-ports "" -> "22"`, container: true},
		{name: "image changed since", pod: current, nsLabels: enabled, cfg: newImage,
			state: StateStale, problem: true, detail: `image "redirector:1", now "redirector:2"`, container: true},
		{name: "moved behind another init container", pod: moved, nsLabels: enabled, cfg: cfg,
			state: StateStale, problem: true, detail: `it is init container 2 of 2, not where placement "first" puts it`, container: true},
		{name: "missing in an opted-in namespace", pod: appPod("late"), nsLabels: enabled, cfg: cfg,
			state: StateNotInjected, why: WhyMissing, problem: true, detail: "created before its namespace or the pod opted in", container: true},
		{name: "opted in by label, missing", pod: appPod("late", labelled(webhook.PodLabel, "true")), cfg: cfg,
			state: StateNotInjected, why: WhyMissing, problem: true, container: true},
		{name: "opted out", pod: appPod("out", labelled(webhook.PodLabel, "false")), nsLabels: enabled, cfg: cfg,
			state: StateNotInjected, why: string(webhook.ReasonPodOptedOut), detail: "opted out (label meshinit.io/inject=false)"},
		{name: "host network", pod: appPod("host", func(p *corev1.Pod) { p.Spec.HostNetwork = true }), nsLabels: enabled, cfg: cfg,
			state: StateNotInjected, why: string(webhook.ReasonHostNetwork), detail: "hostNetwork: true"},
		{name: "namespace opted out, pod opted in", pod: appPod("x", labelled(webhook.PodLabel, "true")), nsLabels: disabled, cfg: cfg,
			state: StateNotInjected, why: string(webhook.ReasonNamespaceOptedOut), detail: "its namespace opted out"},
		{name: "PodSecurity baseline", pod: appPod("psa"), nsLabels: baseline, cfg: cfg,
			state: StateNotInjected, why: WhyPodSecurity, problem: true, detail: `enforces PodSecurity "baseline"`},
		{name: "an annotation the webhook refuses", pod: appPod("bad", annotated("traffic.meshinit.io/exclude-inbound-ports", "80-")), nsLabels: enabled, cfg: cfg,
			state: StateNotInjected, why: WhyRefused, problem: true, detail: "meshinit would refuse it now: pod not injected: invalid annotation traffic.meshinit.io/exclude-inbound-ports"},
		{name: "opted out, with a meshinit-redirect of its own", pod: forgedOptOut, nsLabels: enabled, cfg: cfg,
			state: StateNotInjected, why: string(webhook.ReasonPodOptedOut), detail: "(it carries a meshinit-redirect of its own)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, container := classifyPod(tc.pod, tc.nsLabels, tc.cfg)
			if got.State != tc.state || got.Why != tc.why || got.Problem != tc.problem || !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("classifyPod = %+v\nwant state %s, why %q, problem %v, detail containing %q", got, tc.state, tc.why, tc.problem, tc.detail)
			}
			if (container != nil) != tc.container {
				t.Errorf("canonical container %v, want one: %v", container, tc.container)
			}
			if got.Namespace != "app" || got.Name != tc.pod.Name {
				t.Errorf("names the pod %s/%s, want app/%s", got.Namespace, got.Name, tc.pod.Name)
			}
		})
	}
}

// TestClassifyPodConfigs: a stale pod's report carries the configuration
// hash it was injected with and the one the configuration gives it now.
func TestClassifyPodConfigs(t *testing.T) {
	before := parseConfig(t, "image: redirector:1\n")
	after := parseConfig(t, "image: redirector:1\nredirect: {exclude-outbound-ports: \"22\"}\n")
	pod := injectedBy(t, appPod("web"), enabled, before)
	current, _ := classifyPod(pod, enabled, before)
	stale, _ := classifyPod(pod, enabled, after)
	if current.Config == "" || current.Config != current.WantConfig {
		t.Errorf("current pod: config %q, want %q", current.Config, current.WantConfig)
	}
	if stale.Config != current.Config || stale.WantConfig == stale.Config || stale.WantConfig == "" {
		t.Errorf("stale pod: config %q -> %q, want %q -> another", stale.Config, stale.WantConfig, current.Config)
	}
}

func TestArgsDiff(t *testing.T) {
	got := argsDiff([]string{"apply", "--a=1", "--b=2", "--gone=x"}, []string{"apply", "--a=1", "--b=3", "--new="})
	want := []string{`--b "2" -> "3"`, `--new not set, now ""`, `--gone "x", now not set`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("argsDiff = %q, want %q", got, want)
	}
}
