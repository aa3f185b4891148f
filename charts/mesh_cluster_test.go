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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
)

// TestMeshBypassesRefused: on a real API server, for each preset and in
// both injector modes (webhook: pods injected by the webhook in-process;
// policy: injected by the chart's MutatingAdmissionPolicy), a pod that
// takes a required port, destination or identity around the proxy through
// its mesh's own annotation is refused by the RedirectPolicy's policy with
// a message naming that annotation, and the same pod is admitted where the
// RedirectPolicy does not require what it takes around the proxy (the
// bypass table: meshBypasses). Each RedirectPolicy lives in a namespace of
// its own.
func TestMeshBypassesRefused(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	for _, mode := range []string{"webhook", "policy"} {
		if mode == "policy" && !policyInjectorServed(t, server) {
			return
		}
		c := newCluster(t, server, map[string]string{"webhook": "", "policy": "policy"}[mode])
		// A namespace for each RedirectPolicy spec, made when first needed.
		namespaces := map[string]string{}
		nsFor := func(t *testing.T, spec v1alpha1.RedirectPolicySpec) string {
			key, _ := json.Marshal(spec)
			if ns, ok := namespaces[string(key)]; ok {
				return ns
			}
			ns := fmt.Sprintf("mesh-%s-%d", mode, len(namespaces))
			c.policyIn(t, ns, spec)
			namespaces[string(key)] = ns
			return ns
		}
		for _, mesh := range meshes {
			in := c.installMesh(t, mesh, mode)
			for _, b := range meshBypasses(t, mesh) {
				t.Run(mode+"/"+mesh+"/"+b.annotation, func(t *testing.T) {
					p := pod("p", annotations(b.annotation, b.value))
					if in != nil {
						injectedBy(in)(p)
					}
					requires, allows := nsFor(t, b.requires), nsFor(t, b.allows)
					// Eventually: the chart's objects for this mesh replace
					// the previous mesh's as the API server's informers see them.
					testkit.Eventually(t, 30*time.Second, "refused naming "+b.annotation, func() error {
						got, err := verdictOf(c.createDryRun(requires, p.DeepCopy()))
						if err != nil {
							return err
						}
						if got.binding == "" || !strings.Contains(got.message, b.annotation) {
							return fmt.Errorf("%s=%s in %s: %+v, want a refusal naming %s", b.annotation, b.value, requires, got, b.annotation)
						}
						return nil
					})
					testkit.Eventually(t, 30*time.Second, "admitted", func() error {
						got, err := verdictOf(c.createDryRun(allows, p.DeepCopy()))
						if err != nil {
							return err
						}
						if got.binding != "" {
							return fmt.Errorf("%s=%s in %s: %+v, want admitted", b.annotation, b.value, allows, got)
						}
						return nil
					})
				})
			}
		}
	}
}

// policyIn makes namespace ns, opted in, with the RedirectPolicy "mesh" of
// spec, and waits until the policy is in effect. Every spec here requires
// something: an opted-in pod on the node's network is refused then.
func (c *cluster) policyIn(t *testing.T, ns string, spec v1alpha1.RedirectPolicySpec) {
	t.Helper()
	c.createNamespace(t, namespace(ns, namespaceLabel, "enabled"))
	c.applyPolicy(t, ns, "mesh", spec)
	testkit.Eventually(t, 30*time.Second, "RedirectPolicy in "+ns, func() error {
		if got, err := verdictOf(c.createDryRun(ns, pod("probe", func(p *corev1.Pod) { p.Spec.HostNetwork = true }))); err != nil || got.binding == "" {
			return fmt.Errorf("probe admitted: %+v %v", got, err)
		}
		return nil
	})
}

// installMesh installs the chart with mesh's preset and returns, in
// webhook mode, the webhook's injector with it, which the tests run
// in-process; nil in policy mode, where the chart's MutatingAdmissionPolicy
// injects.
func (c *cluster) installMesh(t *testing.T, mesh, mode string) *injector {
	t.Helper()
	values := meshPodValues(mesh)
	c.install(t, values)
	if mode != "webhook" {
		return nil
	}
	in, err := newInjector(values)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestMeshTypeChecking: with each preset, the RedirectPolicy's policy
// (whose CEL reads the mesh's annotations) passes the API server's type
// checking, as TestTypeChecking checks the installed one; and so does every
// ValidatingAdmissionPolicy of policy mode (the injector's own, with the
// injector's variables in the RedirectPolicy's too), with the default values.
func TestMeshTypeChecking(t *testing.T) {
	checker := apiServer(t).typeChecker(t)
	// These three presets have between them every kind of mesh annotation
	// (Kuma's are a subset of Istio's).
	for _, tc := range []struct{ mesh, mode string }{{"istio", "webhook"}, {"linkerd", "webhook"}, {"consul", "webhook"}, {"", "policy"}} {
		var values map[string]any
		if tc.mesh != "" {
			values = map[string]any{"mesh": tc.mesh}
		}
		vaps := charts.Find(renderMode(t, values, tc.mode), "ValidatingAdmissionPolicy", "")
		if len(vaps) == 0 {
			t.Fatalf("mesh %q, injector %s: no ValidatingAdmissionPolicy", tc.mesh, tc.mode)
		}
		for _, o := range vaps {
			if tc.mode == "webhook" && o.GetName() != policyName {
				continue
			}
			var vap admissionregistrationv1.ValidatingAdmissionPolicy
			charts.DecodeOne(t, []*unstructured.Unstructured{o}, "ValidatingAdmissionPolicy", o.GetName(), &vap)
			start := time.Now()
			warnings := testkit.CheckTypes(checker, &vap)
			t.Logf("mesh %q, injector %s, %s: type checked in %v", tc.mesh, tc.mode, vap.Name, time.Since(start))
			for _, w := range warnings {
				t.Errorf("mesh %q, injector %s, %s: %s: %s", tc.mesh, tc.mode, vap.Name, w.FieldRef, w.Warning)
			}
		}
	}
}

// TestMeshListenersRefused: on a real API server, for each preset and in
// both injector modes, a pod whose mesh annotation moves one of the
// proxy's listeners off a port meshinit leaves to the proxy is refused
// under interception Required, the message naming the annotation, and
// admitted under a RedirectPolicy that requires outbound port 5432 only;
// with a value that leaves the listener in place it is admitted under
// Required (TestMeshListenersRefusedInProcess runs every value in-process).
func TestMeshListenersRefused(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	for _, mode := range []string{"webhook", "policy"} {
		if mode == "policy" && !policyInjectorServed(t, server) {
			return
		}
		c := newCluster(t, server, map[string]string{"webhook": "", "policy": "policy"}[mode])
		required, some := "listeners-"+mode+"-required", "listeners-"+mode+"-some"
		c.install(t, meshPodValues(meshes[0])) // the RedirectPolicy CRD
		c.policyIn(t, required, v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
		c.policyIn(t, some, v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionAllowOptOut, RequiredOutboundPorts: ports(5432)})
		for _, mesh := range meshes {
			in := c.installMesh(t, mesh, mode)
			moved, kept := movedListeners(t, mesh)
			// The first moved value of each annotation, and the first kept.
			seen := map[string]bool{}
			for _, a := range append(moved, kept...) {
				kept := slices.Contains(kept, a)
				if seen[fmt.Sprint(a[0], kept)] {
					continue
				}
				seen[fmt.Sprint(a[0], kept)] = true
				t.Run(fmt.Sprintf("%s/%s/%s=%q", mode, mesh, a[0], a[1]), func(t *testing.T) {
					p := pod("p", annotations(a[0], a[1]))
					if in != nil {
						injectedBy(in)(p)
					}
					testkit.Eventually(t, 30*time.Second, "the verdict", func() error {
						got, err := verdictOf(c.createDryRun(required, p.DeepCopy()))
						switch {
						case err != nil:
							return err
						case kept && got.binding != "":
							return fmt.Errorf("under Required: %+v, want admitted", got)
						case !kept && (got.binding == "" || !strings.Contains(got.message, "sets "+a[0]+", which moves ")):
							return fmt.Errorf("under Required: %+v, want a refusal naming %s", got, a[0])
						}
						if kept {
							return nil
						}
						if got, err := verdictOf(c.createDryRun(some, p.DeepCopy())); err != nil || got.binding != "" {
							return fmt.Errorf("requiring outbound 5432 only: %+v %v, want admitted", got, err)
						}
						return nil
					})
				})
			}
		}
	}
}
