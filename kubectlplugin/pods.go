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
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshinit/meshinit/webhook"
)

// PodState is where a pod stands against the installed configuration.
type PodState string

const (
	// StateCurrent: it carries exactly the init container the installed
	// configuration builds for it, at its placement.
	StateCurrent PodState = "current"
	// StateStale: it carries a meshinit-redirect that differs (older
	// settings, another image, moved by another webhook).
	StateStale PodState = "stale"
	// StateNotInjected: it runs without meshinit-redirect; Why says why.
	StateNotInjected PodState = "not-injected"
	// StateFailing: its meshinit-redirect fails (Init:CrashLoopBackOff,
	// Init:Error), so the pod does not start, whatever its injection.
	StateFailing PodState = "failing"
)

// Why a pod is not injected.
const (
	// WhyMissing: it should have it but does not (created before its
	// namespace opted in, or while the injector was down or failed with
	// failurePolicy Ignore).
	WhyMissing = "missing"
	// WhyPodSecurity: its namespace enforces a PodSecurity level that
	// forbids the init container's capabilities.
	WhyPodSecurity = "pod-security"
	// WhyRefused: the injector would refuse it now (an invalid annotation
	// or label).
	WhyRefused = "refused"
)

// PodReport is one pod in `pods`.
type PodReport struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	State     PodState `json:"state"`
	// Code is the state's finding code.
	Code Code `json:"code"`
	// Why is a not-injected pod's reason: WhyMissing, WhyPodSecurity,
	// WhyRefused, or the webhook's opt-in reason (pod-opted-out,
	// host-network, namespace-opted-out, ...).
	Why string `json:"why,omitempty"`
	// Detail says it in words: what differs, or why.
	Detail string `json:"detail"`
	// Problem: something to fix (stale, missing, PodSecurity, refused).
	Problem bool `json:"problem"`
	// Config is the status annotation's configuration hash (what it was
	// injected with); WantConfig what the installed configuration gives
	// it (webhook.ConfigHash of its file).
	Config     string `json:"config,omitempty"`
	WantConfig string `json:"wantConfig,omitempty"`
	// Redirect is how its meshinit-redirect ran, from the pod's status.
	Redirect *RedirectRun `json:"redirect,omitempty"`
	// Issues are what else was found: a failing or restarted redirect, a
	// second redirector.
	Issues []Issue `json:"issues,omitempty"`
}

// skipReasons say in words why the webhook leaves a pod alone.
var skipReasons = map[webhook.Reason]string{
	webhook.ReasonPodOptedOut:       "opted out (label " + webhook.PodLabel + "=false)",
	webhook.ReasonHostNetwork:       "uses the node's network (hostNetwork: true), where meshinit cannot redirect",
	webhook.ReasonExcludedNS:        "meshinit never injects in this namespace",
	webhook.ReasonNamespaceOptedOut: "its namespace opted out (label " + webhook.NamespaceLabel + "=disabled)",
	webhook.ReasonNotOptedIn:        "not opted in",
}

// classifyPod is where pod stands under cfg: what the webhook's own Review
// says of it, read back, and what its status says of its meshinit-redirect
// run (dataPlane); and the init container cfg builds for it (nil when it
// is not injected). The webhook leaves a pod alone
// (OutcomeSkipped) although it opted in only when its namespace's
// PodSecurity forbids the init container, and then warns
// (webhook/mutate.go).
func classifyPod(pod *corev1.Pod, namespaceLabels map[string]string, cfg *webhook.Config) (PodReport, *corev1.Container) {
	r := webhook.Review(pod, pod.Namespace, namespaceLabels, cfg)
	rep := PodReport{Namespace: pod.Namespace, Name: pod.Name, Config: statusConfig(pod)}
	if r.Status != nil {
		rep.WantConfig = r.Status.Config
	}
	at := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == webhook.ContainerName })
	switch {
	case r.Outcome == webhook.OutcomeUnchanged:
		rep.State, rep.Code, rep.Detail = StateCurrent, CodePodCurrent, "as the installed configuration injects it"
	case r.Outcome == webhook.OutcomeInjected && at >= 0:
		rep.State, rep.Code, rep.Problem = StateStale, CodePodStale, true
		diffs := containerDiff(pod.Spec.InitContainers, at, *r.Container, cfg.Placement)
		if rep.Config != rep.WantConfig {
			diffs = append(diffs, fmt.Sprintf("injected with configuration %q, the installed one is %q", rep.Config, rep.WantConfig))
		}
		rep.Detail = strings.Join(diffs, "; ")
	case r.Outcome == webhook.OutcomeInjected:
		rep.State, rep.Code, rep.Why, rep.Problem = StateNotInjected, CodePodMissing, WhyMissing, true
		rep.Detail = "no " + webhook.ContainerName + " init container: created before its namespace or the pod opted in, or while the injector was down or failed (failurePolicy Ignore)"
	case r.Outcome == webhook.OutcomeDenied:
		rep.State, rep.Code, rep.Why, rep.Problem = StateNotInjected, CodePodRefused, WhyRefused, true
		rep.Detail = "meshinit would refuse it now: " + strings.TrimPrefix(r.Message, "meshinit: ")
	case len(r.Warnings) > 0:
		rep.State, rep.Code, rep.Why, rep.Problem = StateNotInjected, CodePodPodSecurity, WhyPodSecurity, true
		rep.Detail = strings.TrimPrefix(strings.Join(r.Warnings, "; "), "meshinit: ")
	default:
		rep.State, rep.Code, rep.Why, rep.Detail = StateNotInjected, CodePodLeftAlone, string(r.Reason), skipReasons[r.Reason]
	}
	if at >= 0 && rep.State == StateNotInjected {
		rep.Detail += " (it carries a " + webhook.ContainerName + " of its own)"
	}
	dataPlane(&rep, pod)
	return rep, r.Container
}

// statusConfig is the configuration hash in a pod's status annotation, ""
// without one.
func statusConfig(pod *corev1.Pod) string {
	var s webhook.Status
	if json.Unmarshal([]byte(pod.Annotations[webhook.StatusAnnotation]), &s) != nil {
		return ""
	}
	return s.Config
}

// containerDiff says how the init containers' meshinit-redirect (at index
// at) differs from want, at placement p: for people, not for deciding
// (Review decides).
func containerDiff(inits []corev1.Container, at int, want corev1.Container, p webhook.Placement) []string {
	got := inits[at]
	var diffs []string
	if got.Image != want.Image {
		diffs = append(diffs, fmt.Sprintf("image %q, now %q", got.Image, want.Image))
	}
	diffs = append(diffs, argsDiff(got.Args, want.Args)...)
	g, w := got, want
	g.Image, g.Args, w.Image, w.Args = "", nil, "", nil
	if gj, wj := jsonOf(g), jsonOf(w); gj != wj {
		diffs = append(diffs, "other fields differ (resources, securityContext, ...): kubectl meshinit explain shows both")
	}
	wantAt := 0
	if p == webhook.PlaceLast {
		wantAt = len(inits) - 1
	}
	if at != wantAt {
		diffs = append(diffs, fmt.Sprintf("it is init container %d of %d, not where placement %q puts it", at+1, len(inits), p))
	}
	if len(diffs) == 0 {
		diffs = append(diffs, "its "+webhook.StatusAnnotation+" annotation differs")
	}
	return diffs
}

// argsDiff names the redirector flags whose values differ, in want's
// order: `--exclude-outbound-ports "" -> "22"`.
func argsDiff(got, want []string) []string {
	values := func(args []string) (map[string]string, []string) {
		m := map[string]string{}
		var order []string
		for _, a := range args {
			k, v, _ := strings.Cut(a, "=")
			m[k] = v
			order = append(order, k)
		}
		return m, order
	}
	g, gOrder := values(got)
	w, wOrder := values(want)
	var diffs []string
	for _, k := range wOrder {
		switch gv, ok := g[k]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s not set, now %q", k, w[k]))
		case gv != w[k]:
			diffs = append(diffs, fmt.Sprintf("%s %q -> %q", k, gv, w[k]))
		}
	}
	for _, k := range gOrder {
		if _, ok := w[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %q, now not set", k, g[k]))
		}
	}
	return diffs
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v) // a corev1.Container always marshals
	return string(b)
}
