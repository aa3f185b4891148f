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
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/webhook"
)

// Install is everything `check` looks at, as read from the cluster by
// gatherInstall; the checks (checks.go) are pure functions of it.
type Install struct {
	Release release
	// RedirectPolicyServed: the API server serves the RedirectPolicy CRD's
	// resource (meshinit.io/v1alpha1 redirectpolicies).
	RedirectPolicyServed bool
	// RedirectorTrustServed: it serves the RedirectorTrust CRD's resource
	// (meshinit.io/v1alpha1 redirectortrusts), the redirector trust
	// policy's paramKind.
	RedirectorTrustServed bool
	// RedirectPolicies counts the RedirectPolicies in all namespaces (-1
	// when they could not be listed).
	RedirectPolicies int

	// The release's admission objects (cluster-scoped, found by label).
	Policies               []admissionregistrationv1.ValidatingAdmissionPolicy
	Bindings               []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	MutatingPolicies       []admissionregistrationv1.MutatingAdmissionPolicy
	MutatingPolicyBindings []admissionregistrationv1.MutatingAdmissionPolicyBinding
	WebhookConfigs         []admissionregistrationv1.MutatingWebhookConfiguration

	// ConfigMap holds the webhook's configuration (loadConfig), Config
	// as parsed; ConfigErr is why it is not usable, nil when it is. In
	// policy mode no webhook reads it: the MutatingAdmissionPolicy holds
	// the same settings as CEL, and pods and explain read them here.
	ConfigMap string
	Config    *webhook.Config
	ConfigErr error

	// The webhook, in webhook mode: its Deployment (nil if missing), the
	// options its arguments give (ArgsErr when they do not parse), its
	// Service, that Service's EndpointSlices, and the serving certificate
	// as its endpoints (or the Secret) present it.
	Deployment *appsv1.Deployment
	Server     webhook.ServerOptions
	ArgsErr    error
	Service    *corev1.Service
	Endpoints  []discoveryv1.EndpointSlice
	Served     []Served

	// TrustParams are the RedirectorTrusts the release's redirector trust
	// policy (trust-redirector.yaml) takes its parameters from by name, as
	// read (not read when RedirectorTrustServed is false).
	TrustParams []TrustParams
}

// TrustParams is a RedirectorTrust that bindings of a
// ValidatingAdmissionPolicy whose paramKind is meshinit.io/v1alpha1
// RedirectorTrust name in their paramRef: the API server looks it up for
// every request they match, before their match conditions.
type TrustParams struct {
	Policy string
	// Bindings name it, with Deny their parameterNotFoundAction Deny (the
	// API server refuses what they match while it is missing).
	Bindings, Deny []string
	// Namespace is "" when the paramRef names none: then the API server
	// looks in the namespace of what it admits, and it is not read here.
	Namespace, Name string
	// Trust is nil when it does not exist or could not be read (Err).
	Trust *v1alpha1.RedirectorTrust
	Err   error
}

// trustKind is the redirector trust policy's paramKind.
const trustKind = "RedirectorTrust"

// trustResource is the RedirectorTrust CRD's resource, as RBAC names it.
var trustResource = v1alpha1.SchemeGroupVersion.WithResource("redirectortrusts")

// trustsRedirectors reports whether p takes a RedirectorTrust as its
// parameters: the chart's redirector trust policy.
func trustsRedirectors(p admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	k := p.Spec.ParamKind
	return k != nil && k.Kind == trustKind && k.APIVersion == v1alpha1.SchemeGroupVersion.String()
}

// trustParams are the RedirectorTrusts the bindings of in's policies that
// take one name, one per policy and RedirectorTrust, not read yet.
func (in Install) trustParams() []TrustParams {
	var out []TrustParams
	for _, p := range in.Policies {
		if !trustsRedirectors(p) {
			continue
		}
		for _, b := range in.Bindings {
			pr := b.Spec.ParamRef
			if b.Spec.PolicyName != p.Name || pr == nil || pr.Name == "" {
				continue
			}
			i := slices.IndexFunc(out, func(t TrustParams) bool {
				return t.Policy == p.Name && t.Namespace == pr.Namespace && t.Name == pr.Name
			})
			if i < 0 {
				out = append(out, TrustParams{Policy: p.Name, Namespace: pr.Namespace, Name: pr.Name})
				i = len(out) - 1
			}
			out[i].Bindings = append(out[i].Bindings, b.Name)
			if pr.ParameterNotFoundAction != nil && *pr.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
				out[i].Deny = append(out[i].Deny, b.Name)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Bindings)
		slices.Sort(out[i].Deny)
	}
	slices.SortFunc(out, func(a, b TrustParams) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// gatherTrust reads each RedirectorTrust of in.trustParams() by name, as
// the API server does, unless the API server does not serve the kind (the
// check says so). A refused read is kept in the TrustParams for the check
// to report: it needs get on that RedirectorTrust, which nothing else of
// check does.
func gatherTrust(ctx context.Context, c *clients, in *Install) {
	in.TrustParams = in.trustParams()
	if !in.RedirectorTrustServed {
		return
	}
	for i, t := range in.TrustParams {
		if t.Namespace == "" {
			continue
		}
		in.TrustParams[i].Trust, in.TrustParams[i].Err = getTrust(ctx, c, t.Namespace, t.Name)
	}
}

// getTrust reads the RedirectorTrust namespace/name: nil, nil when it does
// not exist.
func getTrust(ctx context.Context, c *clients, namespace, name string) (*v1alpha1.RedirectorTrust, error) {
	u, err := c.dynamic.Resource(trustResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, readError("get", trustCRDName, namespace, err)
	}
	var trust v1alpha1.RedirectorTrust
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &trust); err != nil {
		return nil, fmt.Errorf("RedirectorTrust %s/%s: %w", namespace, name, err)
	}
	return &trust, nil
}

// CertMode is where the webhook's serving certificate comes from, as its
// arguments say (certs' default when they do not).
func (in Install) CertMode() certs.Mode {
	if in.Server.Certs.Mode == "" {
		return certs.ModeSelfManaged
	}
	return in.Server.Certs.Mode
}

// ServiceRef is the Service the webhook configuration sends reviews to.
func (in Install) ServiceRef() *admissionregistrationv1.ServiceReference {
	for _, m := range in.WebhookConfigs {
		for _, w := range m.Webhooks {
			if w.ClientConfig.Service != nil {
				return w.ClientConfig.Service
			}
		}
	}
	return nil
}

// serverName is the name the API server verifies the webhook's
// certificate for: its Service's, <name>.<namespace>.svc.
func (in Install) serverName() string {
	ref := in.ServiceRef()
	return ref.Name + "." + ref.Namespace + ".svc"
}

// gatherInstall reads what `check` looks at. A read RBAC forbids is an
// error naming it; the MutatingAdmissionPolicy API may be absent.
func gatherInstall(ctx context.Context, c *clients, r release) (Install, error) {
	in := Install{Release: r}
	in.Config, in.ConfigMap, in.ConfigErr = loadConfig(ctx, c.kube, &in.Release)
	r = in.Release
	sel := r.selector()
	admission := c.kube.AdmissionregistrationV1()

	resources, err := c.kube.Discovery().ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return in, readError("discover", v1alpha1.SchemeGroupVersion.String(), "", err)
	default:
		for _, res := range resources.APIResources {
			in.RedirectPolicyServed = in.RedirectPolicyServed || res.Name == "redirectpolicies"
			in.RedirectorTrustServed = in.RedirectorTrustServed || res.Name == trustResource.Resource
		}
	}
	in.RedirectPolicies = -1
	if in.RedirectPolicyServed {
		list, err := c.dynamic.Resource(v1alpha1.SchemeGroupVersion.WithResource("redirectpolicies")).List(ctx, metav1.ListOptions{})
		if err != nil {
			return in, readError("list", "redirectpolicies."+v1alpha1.GroupName, "", err)
		}
		in.RedirectPolicies = len(list.Items)
	}

	vaps, err := admission.ValidatingAdmissionPolicies().List(ctx, sel)
	if err != nil {
		return in, readError("list", "validatingadmissionpolicies.admissionregistration.k8s.io", "", err)
	}
	in.Policies = vaps.Items
	bindings, err := admission.ValidatingAdmissionPolicyBindings().List(ctx, sel)
	if err != nil {
		return in, readError("list", "validatingadmissionpolicybindings.admissionregistration.k8s.io", "", err)
	}
	in.Bindings = bindings.Items
	mwcs, err := admission.MutatingWebhookConfigurations().List(ctx, sel)
	if err != nil {
		return in, readError("list", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", err)
	}
	in.WebhookConfigs = mwcs.Items
	switch mutating, err := admission.MutatingAdmissionPolicies().List(ctx, sel); {
	case notServed(err):
	case err != nil:
		return in, readError("list", "mutatingadmissionpolicies.admissionregistration.k8s.io", "", err)
	default:
		in.MutatingPolicies = mutating.Items
		mapBindings, err := admission.MutatingAdmissionPolicyBindings().List(ctx, sel)
		if err != nil {
			return in, readError("list", "mutatingadmissionpolicybindings.admissionregistration.k8s.io", "", err)
		}
		in.MutatingPolicyBindings = mapBindings.Items
	}

	gatherTrust(ctx, c, &in)

	if len(in.WebhookConfigs) > 0 {
		if err := gatherWebhook(ctx, c, &in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// gatherWebhook reads the webhook's Deployment, Service, endpoints and
// served certificate.
func gatherWebhook(ctx context.Context, c *clients, in *Install) error {
	ns := in.Release.Namespace
	deployments, err := c.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{
		LabelSelector: in.Release.selector().LabelSelector + "," + labelComponent + "=webhook",
	})
	if err != nil {
		return readError("list", "deployments.apps", ns, err)
	}
	if len(deployments.Items) > 0 {
		in.Deployment = &deployments.Items[0]
		if cs := in.Deployment.Spec.Template.Spec.Containers; len(cs) > 0 {
			in.Server, in.ArgsErr = webhook.ParseArgs(cs[0].Args)
		}
	}
	ref := in.ServiceRef()
	if ref == nil {
		return nil
	}
	svc, err := c.kube.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return readError("get", "services", ref.Namespace, err)
	default:
		in.Service = svc
	}
	endpoints, err := c.kube.DiscoveryV1().EndpointSlices(ref.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + ref.Name,
	})
	if err != nil {
		return readError("list", "endpointslices.discovery.k8s.io", ref.Namespace, err)
	}
	in.Endpoints = endpoints.Items
	in.Served = c.served(ctx, *in)
	return nil
}

// object names an object as the findings do: "Kind name".
func object(kind, name string) string { return fmt.Sprintf("%s %s", kind, name) }
