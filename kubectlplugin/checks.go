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
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/webhook"
)

// A check is one of `check`'s: a pure function of what was gathered and
// the time, returning a Finding for each thing it looked at.
type check func(in Install, now time.Time) []Finding

// checks run in this order: the API and policies first (with the redirector
// images they trust), then the injector (webhook or
// MutatingAdmissionPolicy), its configuration, the webhook's replicas and
// its certificates.
var checks = []check{checkRedirectPolicyAPI, checkPolicies, checkRedirectorTrust, checkInjector, checkConfig, checkWebhook, checkCertificates}

// runChecks runs every check.
func runChecks(in Install, now time.Time) []Finding {
	var out []Finding
	for _, c := range checks {
		out = append(out, c(in, now)...)
	}
	return out
}

// helmFix re-renders the release: helm upgrade creates again what is
// missing and puts back what was changed.
func helmFix(r release, set ...string) string {
	name := cmp.Or(r.Name, chartName)
	fix := fmt.Sprintf("helm upgrade %s charts/meshinit -n %s --reset-then-reuse-values", name, r.Namespace)
	for _, s := range set {
		fix += " --set " + s
	}
	return fix
}

const crdName = "redirectpolicies." + v1alpha1.GroupName

func checkRedirectPolicyAPI(in Install, _ time.Time) []Finding {
	obj := object("CustomResourceDefinition", crdName)
	if !in.RedirectPolicyServed {
		return []Finding{problem(CodeRedirectPolicyAPI, obj, "not served: RedirectPolicies cannot be created, and the policy cannot read them (with policy.failurePolicy Fail it refuses what it matches)",
			"kubectl apply -f charts/meshinit/crds/meshinit.io_redirectpolicies.yaml   # helm installs CRDs but never upgrades or re-creates them")}
	}
	return []Finding{ok(CodeRedirectPolicyAPI, obj, fmt.Sprintf("served as %s; %s", v1alpha1.SchemeGroupVersion, plural(in.RedirectPolicies, "RedirectPolicy", "RedirectPolicies")))}
}

// enforcesRedirectPolicies reports whether p is the policy that reads
// RedirectPolicies (its parameters).
func enforcesRedirectPolicies(p admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	k := p.Spec.ParamKind
	return k != nil && k.Kind == "RedirectPolicy" && k.APIVersion == v1alpha1.SchemeGroupVersion.String()
}

// guardsWebhookConfig reports whether p is the policy that keeps the
// webhook's ServiceAccount to the caBundle (webhook-cabundle-policy.yaml).
func guardsWebhookConfig(p admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	if p.Spec.MatchConstraints == nil {
		return false
	}
	return slices.ContainsFunc(p.Spec.MatchConstraints.ResourceRules, func(r admissionregistrationv1.NamedRuleWithOperations) bool {
		return slices.Contains(r.Resources, "mutatingwebhookconfigurations")
	})
}

// checkPolicies: the ValidatingAdmissionPolicies are there, type-checked
// without warnings, and bound; the one that enforces RedirectPolicies in
// both scopes (meshinit's namespace for every namespace, and each
// namespace's own).
func checkPolicies(in Install, _ time.Time) []Finding {
	var out []Finding
	r := in.Release
	if !slices.ContainsFunc(in.Policies, enforcesRedirectPolicies) {
		out = append(out, problem(CodeEnforcingPolicy, "ValidatingAdmissionPolicy", "none of "+r.String()+" enforces RedirectPolicies: they are not enforced", helmFix(r, "policy.enabled=true")))
	}
	if len(in.WebhookConfigs) > 0 && !slices.ContainsFunc(in.Policies, guardsWebhookConfig) {
		out = append(out, problem(CodeCABundleGuard, "ValidatingAdmissionPolicy", "none keeps the webhook's ServiceAccount to the caBundle of its MutatingWebhookConfiguration: a stolen webhook token could rewrite it", helmFix(r)))
	}
	policies := slices.Clone(in.Policies)
	slices.SortFunc(policies, func(a, b admissionregistrationv1.ValidatingAdmissionPolicy) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range policies {
		out = append(out, typeChecked(p, r))
		var bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
		for _, b := range in.Bindings {
			if b.Spec.PolicyName == p.Name {
				bindings = append(bindings, b)
			}
		}
		out = append(out, bound(p, bindings, r)...)
	}
	for _, b := range in.Bindings {
		if !slices.ContainsFunc(in.Policies, func(p admissionregistrationv1.ValidatingAdmissionPolicy) bool { return p.Name == b.Spec.PolicyName }) {
			out = append(out, problem(CodeBindingOrphaned, object("ValidatingAdmissionPolicyBinding", b.Name), "binds ValidatingAdmissionPolicy "+b.Spec.PolicyName+", which does not exist", helmFix(r)))
		}
	}
	return out
}

// typeChecked: the API server's type check of p (status.typeChecking,
// which kube-controller-manager fills in) is done for its current
// generation and warns about nothing.
func typeChecked(p admissionregistrationv1.ValidatingAdmissionPolicy, r release) Finding {
	obj := object("ValidatingAdmissionPolicy", p.Name)
	tc := p.Status.TypeChecking
	switch {
	case tc == nil || p.Status.ObservedGeneration < p.Generation:
		return problem(CodeTypeChecked, obj, fmt.Sprintf("not type-checked yet (status.observedGeneration %d, generation %d): kube-controller-manager's validatingadmissionpolicy-status controller checks a policy within seconds of a change",
			p.Status.ObservedGeneration, p.Generation), "kubectl meshinit check   # again in a minute; if it stays, look at kube-controller-manager")
	case len(tc.ExpressionWarnings) > 0:
		var ws []string
		for _, w := range tc.ExpressionWarnings {
			ws = append(ws, w.FieldRef+": "+w.Warning)
		}
		return problem(CodeTypeChecked, obj, fmt.Sprintf("type checking warns %s: %s", plural(len(ws), "time", "times"), strings.Join(ws, "; ")),
			helmFix(r)+"   # with a chart made for this Kubernetes version: its CEL does not type-check against this API server's types")
	}
	return ok(CodeTypeChecked, obj, "type-checked without warnings")
}

// bound: p has a binding; the RedirectPolicy one has both scopes (the
// RedirectPolicies of meshinit's namespace, and each namespace's own), each
// for both ways a pod opts in (its namespace, and its own label elsewhere:
// the -labelled bindings, with an objectSelector). A binding whose paramRef
// names one object (the redirector trust's RedirectorTrust) is worded with it.
func bound(p admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding, r release) []Finding {
	if len(bindings) == 0 {
		return []Finding{problem(CodePolicyBound, object("ValidatingAdmissionPolicy", p.Name), "no ValidatingAdmissionPolicyBinding binds it: it is not enforced", helmFix(r))}
	}
	type scope struct {
		paramNamespace string
		labelled       bool
	}
	var out []Finding
	scopes := map[scope]bool{}
	for _, b := range bindings {
		where := "everywhere"
		m := b.Spec.MatchResources
		if m != nil && (selects(m.NamespaceSelector) || selects(m.ObjectSelector)) {
			where = "where its matchResources select"
		}
		switch pr := b.Spec.ParamRef; {
		case pr != nil && pr.Name != "":
			where = "with " + paramObject(p, pr) + " " + where
		case pr != nil:
			where = "with the RedirectPolicies of each namespace"
			if pr.Namespace != "" {
				where = "with the RedirectPolicies of namespace " + pr.Namespace + " everywhere"
			}
			scopes[scope{pr.Namespace, m != nil && selects(m.ObjectSelector)}] = true
		}
		out = append(out, ok(CodePolicyBound, object("ValidatingAdmissionPolicyBinding", b.Name), fmt.Sprintf("binds %s %s, validationActions %v", p.Name, where, b.Spec.ValidationActions)))
	}
	if enforcesRedirectPolicies(p) {
		for _, want := range []struct {
			scope
			what string
		}{
			{scope{r.Namespace, false}, "the RedirectPolicies of meshinit's namespace " + r.Namespace + ", which apply to every namespace"},
			{scope{"", false}, "each namespace's own RedirectPolicies"},
			{scope{r.Namespace, true}, "the RedirectPolicies of meshinit's namespace " + r.Namespace + " for pods labelled meshinit.io/inject=true outside opted-in namespaces"},
			{scope{"", true}, "each namespace's own RedirectPolicies for pods labelled meshinit.io/inject=true outside opted-in namespaces"},
		} {
			if !scopes[want.scope] {
				out = append(out, problem(CodePolicyBound, object("ValidatingAdmissionPolicy", p.Name), "no binding reads "+want.what, helmFix(r)))
			}
		}
	}
	return out
}

// paramObject names the one object a binding's paramRef names (its name
// set) as the API server looks it up: of p's paramKind, in the paramRef's
// namespace or, without one, in the namespace of what is admitted.
func paramObject(p admissionregistrationv1.ValidatingAdmissionPolicy, pr *admissionregistrationv1.ParamRef) string {
	kind := "the parameter"
	if k := p.Spec.ParamKind; k != nil {
		kind = k.Kind
	}
	if pr.Namespace == "" {
		return kind + " " + pr.Name + " of the namespace of what it admits"
	}
	return kind + " " + pr.Namespace + "/" + pr.Name
}

// trustCRDName is the RedirectorTrust CRD's name.
var trustCRDName = trustResource.GroupResource().String()

// checkRedirectorTrust: the API server serves RedirectorTrusts, and each
// one the redirector trust policy's bindings name is there, names a current
// image, and trusts the image the injector gives meshinit-redirect.
// Missing, the API server refuses every request its Deny bindings match:
// it resolves the parameters before the match conditions that pick
// meshinit's init container.
func checkRedirectorTrust(in Install, _ time.Time) []Finding {
	if !in.RedirectorTrustServed {
		return trustNotServed(in)
	}
	r := in.Release
	injected := in.injectedImage()
	var out []Finding
	for _, t := range in.TrustParams {
		if t.Namespace == "" {
			out = append(out, info(CodeRedirectorTrust, object(trustKind, t.Name),
				fmt.Sprintf("not checked: %s read it from the namespace of each pod they admit", strings.Join(t.Bindings, ", "))))
			continue
		}
		obj := object(trustKind, t.Namespace+"/"+t.Name)
		if t.Err != nil {
			out = append(out, problem(CodeRedirectorTrust, obj, "cannot be read: "+t.Err.Error(),
				fmt.Sprintf("kubectl meshinit check   # as a user who may get %s %s in %s", trustCRDName, t.Name, t.Namespace)))
			continue
		}
		if t.Trust == nil {
			detail := fmt.Sprintf("missing: %s %s of ValidatingAdmissionPolicy %s, so ", plural(len(t.Bindings), "binding", "bindings"), strings.Join(t.Bindings, ", "), t.Policy)
			switch {
			case len(t.Deny) == 0:
				detail += "with parameterNotFoundAction Allow they check no redirector image: any image runs as meshinit-redirect where they select"
			case len(t.Deny) < len(t.Bindings):
				detail += fmt.Sprintf("the API server refuses every create and update of a pod or workload %s select, with or without meshinit's init container, until it is back (parameterNotFoundAction Deny); the others check no redirector image",
					strings.Join(t.Deny, ", "))
			default:
				detail += "the API server refuses every create and update of a pod or workload they select, with or without meshinit's init container, until it is back (parameterNotFoundAction Deny)"
			}
			out = append(out, problem(CodeRedirectorTrust, obj, detail, helmFix(r)+"   # renders it again"))
			continue
		}
		current, previous := t.Trust.Spec.Current, t.Trust.Spec.Previous
		trusted := "redirector image " + current + " (spec.current)"
		if previous != "" {
			trusted = "redirector images " + current + " (spec.current) and " + previous + " (spec.previous)"
		}
		switch {
		case current == "" && previous == "":
			out = append(out, problem(CodeRedirectorTrust, obj, fmt.Sprintf("names no image (spec.current and spec.previous empty): %s refuses every meshinit-redirect", t.Policy), helmFix(r)))
		case current == "":
			out = append(out, problem(CodeRedirectorTrust, obj, fmt.Sprintf("names no current image (spec.current empty): only %s (spec.previous) is trusted", previous), helmFix(r)))
		case injected != "" && injected != current && injected != previous:
			out = append(out, problem(CodeRedirectorTrust, obj, fmt.Sprintf("trusts %s, not %s, the one the injector gives meshinit-redirect (ConfigMap %s/%s): %s refuses the pods injected now",
				trusted, injected, r.Namespace, in.ConfigMap, t.Policy), helmFix(r)))
		default:
			out = append(out, ok(CodeRedirectorTrust, obj, "trusts "+trusted))
		}
	}
	return out
}

// trustNotServed: without the RedirectorTrust CRD the release's redirector
// trust policies' paramKind resolves to nothing. An API server that had
// resolved it before finds no RedirectorTrust (what its bindings'
// parameterNotFoundAction does); one that starts without the CRD cannot
// resolve it and treats the policy as misconfigured wherever its
// matchConstraints match, before any binding or match condition: with
// failurePolicy Fail (the chart's) it refuses the request, with Ignore it
// checks nothing (k8s.io/apiserver's policy source and dispatcher; both
// seen on kube-apiserver v1.37.2 in TestAgainstAPIServer and
// TestRedirectorTrustCRDMissing).
func trustNotServed(in Install) []Finding {
	var out []Finding
	obj := object("CustomResourceDefinition", trustCRDName)
	fix := "kubectl apply --server-side -f charts/meshinit/crds/ && " + helmFix(in.Release) +
		"   # Helm installs CRDs but never upgrades or re-creates them; the upgrade renders the RedirectorTrust again"
	for _, p := range in.Policies {
		if !trustsRedirectors(p) {
			continue
		}
		var bindings, deny []string
		for _, b := range in.Bindings {
			if b.Spec.PolicyName != p.Name {
				continue
			}
			bindings = append(bindings, b.Name)
			if pr := b.Spec.ParamRef; pr != nil && pr.ParameterNotFoundAction != nil && *pr.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
				deny = append(deny, b.Name)
			}
		}
		slices.Sort(bindings)
		slices.Sort(deny)
		detail := fmt.Sprintf("not served: RedirectorTrusts cannot be created, and the paramKind of ValidatingAdmissionPolicy %s, %s %s, resolves to nothing",
			p.Name, v1alpha1.SchemeGroupVersion, trustKind)
		if len(bindings) == 0 {
			out = append(out, problem(CodeRedirectorTrust, obj, detail, fix))
			continue
		}
		switch {
		case len(deny) == len(bindings):
			detail += fmt.Sprintf(". An API server that resolved it before finds no RedirectorTrust: it refuses every create and update of a pod or workload its %s %s select, with or without meshinit's init container (parameterNotFoundAction Deny)",
				plural(len(bindings), "binding", "bindings"), strings.Join(bindings, ", "))
		case len(deny) > 0:
			detail += fmt.Sprintf(". An API server that resolved it before finds no RedirectorTrust: it refuses every create and update of a pod or workload %s select, with or without meshinit's init container (parameterNotFoundAction Deny); the others check no redirector image",
				strings.Join(deny, ", "))
		default:
			detail += fmt.Sprintf(". An API server that resolved it before finds no RedirectorTrust: its %s %s check no redirector image (parameterNotFoundAction Allow): any image runs as meshinit-redirect where they select",
				plural(len(bindings), "binding", "bindings"), strings.Join(bindings, ", "))
		}
		if p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore {
			detail += "; one that starts without the CRD cannot resolve the paramKind and checks no redirector image anywhere (failurePolicy Ignore)"
		} else {
			detail += "; one that starts without the CRD cannot resolve the paramKind and refuses every create and update of a pod or workload the policy matches, in every namespace (failurePolicy Fail)"
		}
		out = append(out, problem(CodeRedirectorTrust, obj, detail, fix))
	}
	return out
}

// selects: s narrows what it matches. The API server defaults a binding's
// absent selectors to the empty one, which matches everything.
func selects(s *metav1.LabelSelector) bool {
	return s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0)
}

// checkInjector: pods are injected by the webhook (a
// MutatingWebhookConfiguration) or, in policy mode, a bound
// MutatingAdmissionPolicy.
func checkInjector(in Install, _ time.Time) []Finding {
	r := in.Release
	if len(in.WebhookConfigs) == 0 && len(in.MutatingPolicies) == 0 {
		return []Finding{problem(CodeInjector, "injector", "neither a MutatingWebhookConfiguration nor a MutatingAdmissionPolicy of "+r.String()+": no pod is injected", helmFix(r))}
	}
	var out []Finding
	for _, m := range in.WebhookConfigs {
		var to []string
		for _, w := range m.Webhooks {
			svc, policy := "a URL", ""
			if s := w.ClientConfig.Service; s != nil {
				svc = "Service " + s.Namespace + "/" + s.Name
			}
			if w.FailurePolicy != nil {
				policy = ", failurePolicy " + string(*w.FailurePolicy)
			}
			to = append(to, fmt.Sprintf("%s to %s%s", w.Name, svc, policy))
		}
		out = append(out, ok(CodeInjector, object("MutatingWebhookConfiguration", m.Name), strings.Join(to, "; ")))
	}
	for _, p := range in.MutatingPolicies {
		obj := object("MutatingAdmissionPolicy", p.Name)
		var names []string
		for _, b := range in.MutatingPolicyBindings {
			if b.Spec.PolicyName == p.Name {
				names = append(names, b.Name)
			}
		}
		switch config := in.configHash(); {
		case len(names) == 0:
			out = append(out, problem(CodeMutatingPolicy, obj, "no MutatingAdmissionPolicyBinding binds it: no pod is injected by it", helmFix(r)))
		case config != "" && !injectsConfig(p, config):
			out = append(out, problem(CodeMutatingPolicy, obj, fmt.Sprintf("does not inject the configuration in ConfigMap %s (%s %q): they come from different chart values, so kubectl meshinit pods and explain judge pods by settings it does not inject",
				in.ConfigMap, webhook.StatusAnnotation+" config", config), helmFix(r)))
		default:
			policy := ""
			if p.Spec.FailurePolicy != nil {
				policy = ", failurePolicy " + string(*p.Spec.FailurePolicy)
			}
			out = append(out, ok(CodeMutatingPolicy, obj, "injects in the API server"+policy+"; bound by "+strings.Join(names, ", ")))
		}
	}
	return out
}

// injectedImage is the image the injector gives meshinit-redirect, as the
// webhook's configuration says, "" when that is not known: the
// configuration is not usable, or in policy mode a MutatingAdmissionPolicy
// injects another one (checkInjector says so).
func (in Install) injectedImage() string {
	config := in.configHash()
	if config == "" || slices.ContainsFunc(in.MutatingPolicies, func(p admissionregistrationv1.MutatingAdmissionPolicy) bool { return !injectsConfig(p, config) }) {
		return ""
	}
	return in.Config.Image
}

// configHash is the status annotation's config of the pods the ConfigMap's
// configuration injects, "" when it is not usable.
func (in Install) configHash() string {
	if in.Config == nil {
		return ""
	}
	return in.Config.Status().Config
}

// injectsConfig reports whether p writes a status annotation naming
// config: the chart puts it in p's mutation as a literal.
func injectsConfig(p admissionregistrationv1.MutatingAdmissionPolicy, config string) bool {
	return slices.ContainsFunc(p.Spec.Mutations, func(m admissionregistrationv1.Mutation) bool {
		return m.JSONPatch != nil && strings.Contains(m.JSONPatch.Expression, `\"config\":\"`+config+`\"`)
	})
}

// checkConfig: the webhook's configuration parses. The chart renders it in
// policy mode too (the MutatingAdmissionPolicy's status annotation names
// its hash), but without a webhook nothing else reads it: missing, it
// only keeps `pods` and `explain` from working.
func checkConfig(in Install, _ time.Time) []Finding {
	obj := object("ConfigMap", in.Release.Namespace+"/"+cmp.Or(in.ConfigMap, "?"))
	switch {
	case in.ConfigErr != nil && len(in.WebhookConfigs) == 0:
		return []Finding{info(CodeWebhookConfig, obj, in.ConfigErr.Error()+"; kubectl meshinit pods and explain need it")}
	case in.ConfigErr != nil:
		return []Finding{problem(CodeWebhookConfig, obj, in.ConfigErr.Error(), helmFix(in.Release))}
	}
	return []Finding{ok(CodeWebhookConfig, obj, "the webhook's configuration parses")}
}

// checkWebhook: in webhook mode, the Deployment is available and its
// Service has ready endpoints.
func checkWebhook(in Install, _ time.Time) []Finding {
	if len(in.WebhookConfigs) == 0 {
		return nil
	}
	r := in.Release
	var out []Finding
	d := in.Deployment
	if d == nil {
		out = append(out, problem(CodeWebhookDeployment, "Deployment", "no webhook Deployment of "+r.String()+": reviews fail, so pods in opted-in namespaces are refused (failurePolicy Fail) or start uninjected (Ignore)", helmFix(r)))
	} else {
		out = append(out, deploymentAvailable(*d, in.ArgsErr, r))
	}
	ref := in.ServiceRef()
	if ref == nil {
		return out
	}
	obj := object("Service", ref.Namespace+"/"+ref.Name)
	if in.Service == nil {
		return append(out, problem(CodeWebhookEndpoints, obj, "missing: the webhook configuration sends reviews to it", helmFix(r)))
	}
	if n := readyEndpoints(in); n == 0 {
		out = append(out, problem(CodeWebhookEndpoints, obj, "no ready endpoint: the API server cannot reach the webhook",
			fmt.Sprintf("kubectl -n %s get pods -l %s=webhook,%s=%s   # and their events and logs", ref.Namespace, labelComponent, labelName, chartName)))
	} else {
		out = append(out, ok(CodeWebhookEndpoints, obj, plural(n, "ready endpoint", "ready endpoints")))
	}
	return out
}

func deploymentAvailable(d appsv1.Deployment, argsErr error, r release) Finding {
	obj := object("Deployment", d.Namespace+"/"+d.Name)
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	available := slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
		return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
	})
	switch {
	case argsErr != nil:
		return problem(CodeWebhookDeployment, obj, "the webhook's arguments do not parse: "+argsErr.Error(), helmFix(r))
	case want == 0:
		return problem(CodeWebhookDeployment, obj, "scaled to 0 replicas: pods in opted-in namespaces are refused (failurePolicy Fail) or start uninjected (Ignore)", helmFix(r, "webhook.replicas=2"))
	case !available || d.Status.ReadyReplicas == 0:
		return problem(CodeWebhookDeployment, obj, fmt.Sprintf("not available: %d of %d replicas ready", d.Status.ReadyReplicas, want),
			fmt.Sprintf("kubectl -n %s describe deployment %s; kubectl -n %s logs deployment/%s", d.Namespace, d.Name, d.Namespace, d.Name))
	}
	return ok(CodeWebhookDeployment, obj, fmt.Sprintf("available, %d of %d replicas ready", d.Status.ReadyReplicas, want))
}

// readyEndpoints counts the Service's ready endpoint addresses (an
// endpoint without the condition counts as ready, as for kube-proxy).
func readyEndpoints(in Install) int {
	n := 0
	for _, s := range in.Endpoints {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n += len(e.Addresses)
			}
		}
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
