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
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	labelspkg "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// mapAPI is what .Capabilities.APIVersions must have for injector: policy.
const mapAPI = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"

// Names of the policy mode's objects (release "meshinit").
const (
	injectName            = "meshinit-inject"
	injectPodSecurityName = "meshinit-inject-podsecurity"
)

// withInjector is values (not changed) with injector set.
func withInjector(values map[string]any, injector string) map[string]any {
	out := map[string]any{"injector": injector}
	for k, v := range values {
		out[k] = v
	}
	return out
}

// renderMode renders the chart with values and the injector given, for an
// API server that serves MutatingAdmissionPolicy v1.
func renderMode(t testing.TB, values map[string]any, injector string) []*unstructured.Unstructured {
	t.Helper()
	return charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: withInjector(values, injector),
		IncludeCRDs: true, APIVersions: []string{mapAPI}}, false)
}

// twins are the two injectors the chart renders from the same values, both
// in-process: the webhook (package webhook, its config file from the
// chart's ConfigMap, reached through the chart's selectors) and the
// policies' CEL (compiled as the API server compiles it, reached through
// their namespaceSelector). The API server's own part (the mutation's JSON
// patch, defaulting, reinvocation) is the envtest's (webhook's
// TestPolicyInjectorAgrees).
type twins struct {
	config      webhook.Config
	selectors   []admissionregistrationv1.MutatingWebhook
	inject      *compiled // meshinit-inject: its variables are every policy's
	podSecurity *compiled
	psAction    admissionregistrationv1.ValidationAction
	matchNS     *metav1.LabelSelector
}

func newTwins(t *testing.T, values map[string]any) *twins {
	t.Helper()
	web, pol := renderMode(t, values, "webhook"), renderMode(t, values, "policy")
	var cmWeb, cmPol corev1.ConfigMap
	charts.DecodeOne(t, web, "ConfigMap", "meshinit-webhook", &cmWeb)
	charts.DecodeOne(t, pol, "ConfigMap", "meshinit-webhook", &cmPol)
	if cmWeb.Data["config.yaml"] != cmPol.Data["config.yaml"] {
		t.Fatalf("the webhook's config file differs between the modes:\n%s\n%s", cmWeb.Data["config.yaml"], cmPol.Data["config.yaml"])
	}
	cfg, err := webhook.ParseConfig([]byte(cmWeb.Data["config.yaml"]), releaseNamespace)
	if err != nil {
		t.Fatalf("the chart's config file: %v", err)
	}
	tw := &twins{config: cfg}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	charts.DecodeOne(t, web, "MutatingWebhookConfiguration", "", &mwc)
	tw.selectors = mwc.Webhooks
	var vap, ps admissionregistrationv1.ValidatingAdmissionPolicy
	var psBinding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	charts.DecodeOne(t, pol, "ValidatingAdmissionPolicy", injectName, &vap)
	charts.DecodeOne(t, pol, "ValidatingAdmissionPolicy", injectPodSecurityName, &ps)
	charts.DecodeOne(t, pol, "ValidatingAdmissionPolicyBinding", injectPodSecurityName, &psBinding)
	tw.inject, tw.podSecurity = compile(t, &vap), compile(t, &ps)
	tw.psAction = psBinding.Spec.ValidationActions[0]
	tw.matchNS = vap.Spec.MatchConstraints.NamespaceSelector
	return tw
}

// outcome is what an injector does with a pod's creation, as its client
// sees it.
type outcome struct {
	// Denied is the refusal's message (without the API server's prefix).
	Denied string
	// Warning is the admission warning's text (without the prefix).
	Warning string
	// Args are the injected container's arguments; nil when not injected.
	Args []string
}

func (o outcome) String() string {
	switch {
	case o.Denied != "":
		return "denied: " + o.Denied
	case o.Args != nil:
		return fmt.Sprintf("injected %q (warning %q)", o.Args, o.Warning)
	}
	return fmt.Sprintf("admitted (warning %q)", o.Warning)
}

func selects(t *testing.T, s *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	if s == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Matches(labelspkg.Set(set))
}

// byWebhook is what the webhook does with p created in ns, as the API server
// calls it: only when an entry's selectors match.
func (tw *twins) byWebhook(t *testing.T, ns *corev1.Namespace, p *corev1.Pod) outcome {
	t.Helper()
	called := slices.ContainsFunc(tw.selectors, func(w admissionregistrationv1.MutatingWebhook) bool {
		return selects(t, w.NamespaceSelector, ns.Labels) && selects(t, w.ObjectSelector, p.Labels)
	})
	if !called {
		return outcome{}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	nsLabels := func(context.Context, string) (map[string]string, error) { return ns.Labels, nil }
	resp := webhook.NewHandler(tw.config, nsLabels).Handle(log.IntoContext(context.Background(), logr.Discard()),
		admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID:       "test",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: ns.Name,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		}})
	var o outcome
	if !resp.Allowed {
		o.Denied = resp.Result.Message
		return o
	}
	if len(resp.Warnings) > 0 {
		o.Warning = resp.Warnings[0]
	}
	if len(resp.Patches) > 0 {
		patch, _ := json.Marshal(resp.Patches)
		decoded, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := decoded.Apply(raw)
		if err != nil {
			t.Fatal(err)
		}
		var out corev1.Pod
		if err := json.Unmarshal(patched, &out); err != nil {
			t.Fatal(err)
		}
		o.Args = redirectContainer(&out).Args
	}
	return o
}

// byPolicy is what the policies do with p created in ns: the validating
// policies' decisions (the podsecurity one's by its binding's action) and
// the arguments the mutating policy writes when its variables say it
// injects.
func (tw *twins) byPolicy(t *testing.T, ns *corev1.Namespace, p *corev1.Pod) outcome {
	t.Helper()
	if !selects(t, tw.matchNS, ns.Labels) {
		return outcome{}
	}
	r := request{object: p, namespace: ns}
	var o outcome
	for _, d := range append(tw.inject.decisions(t, r), tw.podSecurity.decisions(t, r)...) {
		if d.Action != validating.ActionDeny {
			continue
		}
		switch {
		case d.Policy == injectPodSecurityName && tw.psAction == admissionregistrationv1.Warn:
			o.Warning = d.Message
		case o.Denied != "":
			t.Fatalf("two denials: %q and %q", o.Denied, d.Message)
		default:
			o.Denied = d.Message
		}
	}
	if o.Denied != "" {
		return o
	}
	var inject bool
	var args []string
	tw.inject.eval(t, r, []string{"variables.inject", "variables.inject ? variables.args : []"}, &inject, &args)
	if inject {
		o.Args = args
	}
	return o
}

// decisions are the policy's decisions for a request, each with the
// policy's name, failing the test on an evaluation error.
func (c *compiled) decisions(t *testing.T, r request) []namedDecision {
	t.Helper()
	var out []namedDecision
	for _, d := range c.validate(t, r).Decisions {
		if d.Evaluation == validating.EvalError {
			t.Fatalf("%s: evaluation error: %s", c.name, d.Message)
		}
		out = append(out, namedDecision{d, c.name})
	}
	return out
}

type namedDecision struct {
	validating.PolicyDecision
	Policy string
}
