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
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/charts"
)

// The adversarial cases of the settingsAsChart shortcut (and of the
// literal comparisons that recognise meshinit's container: argsAsDefaults,
// the env and mount literals): objects a pod author controls that come
// close to the shortcut's condition, each evaluated by the policy as
// rendered and by the same policy with settingsAsChart false, which must
// deny exactly the same.

// shortcutPolicies are the policy as rendered for values, the same policy
// with settingsAsChart false, and without the literal comparisons too.
func shortcutPolicies(t *testing.T, values map[string]any) (withShortcut, without, fieldByField *compiled) {
	t.Helper()
	vap := chartPolicy(t, values)
	return compile(t, vap), compile(t, withoutShortcut(t, vap)), compile(t, withoutLiterals(t, vap))
}

func withoutShortcut(t *testing.T, vap *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	full := vap.DeepCopy()
	for j, v := range full.Spec.Variables {
		if v.Name == "settingsAsChart" {
			full.Spec.Variables[j].Expression = "false"
			return full
		}
	}
	t.Fatal("the policy has no variable settingsAsChart")
	return nil
}

// withoutLiterals is the policy without the shortcut and without the
// literal comparisons that recognise meshinit's container exactly as
// injected (argsAsDefaults, the env and mount literals): each field
// checked on its own.
func withoutLiterals(t *testing.T, vap *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	full := withoutShortcut(t, vap)
	literal := map[string]*regexp.Regexp{
		"redirectEnvCanonical":    regexp.MustCompile(`variables\.redirect\.\?env\.orValue\(\[\]\) == \[[^\n]*\]\n`),
		"redirectMountsCanonical": regexp.MustCompile(`variables\.redirectMounts == \[[^\n]*\]\n`),
		"argsAsDefaults":          regexp.MustCompile(`^.*$`),
	}
	for j, v := range full.Spec.Variables {
		if re, ok := literal[v.Name]; ok {
			e := re.ReplaceAllString(v.Expression, "false\n")
			if v.Name == "argsAsDefaults" {
				e = "false"
			}
			if e == v.Expression || !strings.Contains(e, "false") {
				t.Fatalf("variable %s: no literal comparison in %q", v.Name, v.Expression)
			}
			full.Spec.Variables[j].Expression = e
			delete(literal, v.Name)
		}
	}
	if len(literal) > 0 {
		t.Fatalf("the policy has none of the variables %v", literal)
	}
	return full
}

// adversarialParams are RedirectPolicies that require something in each
// way the skipped checks read (and one that requires nothing).
func adversarialParams() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		redirectPolicy(inNamespace.Name, "optional", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionOptional}),
		redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired}),
		redirectPolicy(inNamespace.Name, "ports", v1alpha1.RedirectPolicySpec{
			Interception: v1alpha1.InterceptionOptional, RequiredInboundPorts: ports(80, 4143, 8080, 9000, 15006, 15020, 20000),
			RequiredOutboundPorts: ports(22, 53, 443, 4140, 8600, 15001, 15053),
		}),
		redirectPolicy(inNamespace.Name, "allows", v1alpha1.RedirectPolicySpec{
			Interception: v1alpha1.InterceptionRequired, AllowedOutboundCIDRExclusions: []v1alpha1.CIDR{"10.0.0.0/8"},
			AllowedOutboundUIDExclusions: []v1alpha1.ID{1000}, AllowedInboundInterfaceExclusions: []v1alpha1.InterfaceName{"eth1"},
			AllowProxyIdentityOverride: true, AllowProxyPortOverride: true,
		}),
	}
}

// denialsOf is compiled.denials for any operation: on UPDATE the API
// server passes the old object too.
func denialsOf(t *testing.T, c *compiled, obj, old runtime.Object, params runtime.Object) []string {
	t.Helper()
	gvk, err := kindOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	meta := obj.(metav1.Object)
	gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resourceOf(gvk.Kind)}
	op, opts, sub := admission.Create, runtime.Object(&metav1.CreateOptions{}), ""
	if old != nil {
		op, opts = admission.Update, &metav1.UpdateOptions{}
		if p, ok := obj.(*corev1.Pod); ok && len(p.Spec.EphemeralContainers) > 0 {
			sub = "ephemeralcontainers"
		}
	}
	attr := admission.NewAttributesRecord(obj, old, gvk, inNamespace.Name, meta.GetName(), gvr, sub,
		op, opts, false, &user.DefaultInfo{Name: "test"})
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk}
	va.VersionedObject.Set(obj)
	if old != nil {
		va.VersionedOldObject.Set(old)
	}
	var out []string
	for _, d := range c.validator.Validate(context.Background(), schema.GroupVersionResource{}, va, params, inNamespace, celconfig.RuntimeCELCostBudget, nil).Decisions {
		if d.Evaluation == validating.EvalError {
			t.Fatalf("evaluation error: %s", d.Message)
		}
		if d.Action == validating.ActionDeny {
			out = append(out, d.Message)
		}
	}
	return out
}

// adversarialCase is one object a pod author sends.
type adversarialCase struct {
	name string
	obj  runtime.Object
	old  runtime.Object // for an UPDATE
	// literals: also compared with the policy without the literal
	// comparisons (meshinit's container changed).
	literals bool
}

// compareShortcut evaluates every case against every RedirectPolicy with
// and without the shortcut, and returns how many were admitted and how
// many objects took the shortcut (for the log).
func compareShortcut(t *testing.T, withShortcut, without, fieldByField *compiled, cases []adversarialCase) (admitted, shortcut int) {
	t.Helper()
	flag := withShortcut.expressions(t, []string{"variables.settingsAsChart"})
	for _, c := range cases {
		r := request{object: c.obj, namespace: inNamespace, params: adversarialParams()[0]}
		va := r.attributes(t)
		req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource{}, metav1.GroupVersionKind(va.VersionedKind))
		results, _, err := flag.ForInput(context.Background(), va, req, plugincel.OptionalVariableBindings{VersionedParams: r.params}, r.namespace, celconfig.RuntimeCELCostBudget)
		if err != nil || results[0].Error != nil {
			t.Fatalf("%s: settingsAsChart: %v %v", c.name, err, results[0].Error)
		}
		if results[0].EvalResult.Value() == true {
			shortcut++
		}
		for _, rp := range adversarialParams() {
			got, want := denialsOf(t, withShortcut, c.obj, c.old, rp), denialsOf(t, without, c.obj, c.old, rp)
			if !slices.Equal(got, want) {
				t.Errorf("%s, RedirectPolicy %s: with settingsAsChart denied\n  %q\nreading every setting\n  %q", c.name, rp.GetName(), got, want)
			}
			if c.literals {
				if byField := denialsOf(t, fieldByField, c.obj, c.old, rp); !slices.Equal(got, byField) {
					t.Errorf("%s, RedirectPolicy %s: with the literal comparisons denied\n  %q\nchecking each field\n  %q", c.name, rp.GetName(), got, byField)
				}
			}
			if len(got) == 0 {
				admitted++
			}
		}
	}
	return admitted, shortcut
}

// TestSettingsAsChartAdversarial: a pod author's attempts to get an object
// admitted by the shortcut that the full evaluation denies: annotations the
// policy does not read (case, whitespace, other meshes' and meshinit's
// near misses, empty values), meshinit's container forged with the
// injector's arguments but anything else changed (env, mounts, command,
// privileges, placement, a second one), arguments one character away from
// the injector's, workload templates of every kind, an ephemeral container
// added by UPDATE; for chart values of every mesh preset, JSON logs,
// privileged injection, placement last, and numbers as chart values.
func TestSettingsAsChartAdversarial(t *testing.T) {
	chartValues := []map[string]any{
		nil,
		{"mesh": "istio", "inject": map[string]any{"logFormat": "json"}},
		{"mesh": "linkerd"},
		{"mesh": "kuma"},
		{"mesh": "consul"},
		{"inject": map[string]any{"privileged": true, "placement": "last"}},
		{"inject": map[string]any{"redirect": map[string]any{
			"proxy-uid": 1337, "proxy-gid": float64(1337), "outbound-proxy-port": 15001, "dns-proxy-port": "15053",
			"include-inbound-ports": "*", "exclude-outbound-ports": "", "capture-dns": "nameservers",
		}}},
		{"inject": map[string]any{"redirect": map[string]any{"include-inbound-ports": " *", "exclude-outbound-uids": 1000}}},
	}
	for i, values := range chartValues {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // in-process and CPU-bound: each chart value on its own core when one is free
			withShortcut, without, fieldByField := shortcutPolicies(t, values)
			in, err := newInjector(values)
			if err != nil {
				t.Fatal(err)
			}
			base, err := in.inject(pod("p"))
			if err != nil {
				t.Fatal(err)
			}
			var defaultArgs []string
			withShortcut.eval(t, request{object: base, namespace: inNamespace, params: adversarialParams()[0]}, []string{"variables.defaultArgs"}, &defaultArgs)
			if !slices.Equal(redirectContainer(base).Args, defaultArgs) {
				t.Logf("the webhook writes %q, the policy's defaultArgs are %q: the shortcut is not taken for injected pods", redirectContainer(base).Args, defaultArgs)
			}
			var cases []adversarialCase
			add := func(name string, obj runtime.Object) { cases = append(cases, adversarialCase{name: name, obj: obj}) }
			injectedWith := func(opts ...podOption) *corev1.Pod {
				p := base.DeepCopy()
				for _, o := range opts {
					o(p)
				}
				return p
			}

			// Annotations close to the ones the policy reads, on the pod the
			// webhook injected without them and on the pod the webhook
			// injects with them (it reads keys exactly, as the policy does).
			near := []string{
				"Traffic.meshinit.io/exclude-outbound-ports", "traffic.meshinit.io/Exclude-Outbound-Ports", "TRAFFIC.MESHINIT.IO/EXCLUDE-OUTBOUND-PORTS",
				"traffic.meshinit.io/exclude-outbound-ports ", " traffic.meshinit.io/exclude-outbound-ports", "traffic.meshinit.io/exclude-outbound-ports\t",
				"traffic.meshinit.io/exclude_outbound_ports", "traffic.meshinit.io/excludeOutboundPorts", "traffic.meshinit.io/", "traffic.meshinit.io",
				"traffic.meshinit.io/ignored-inbound-ports", "traffic.meshinit.io/ipv6", "traffic.meshinit.io/iptables-mode", "traffic.meshinit.io/log-format",
				"meshinit.io/exclude-outbound-ports", "traffic.meshinit.io/exclude-outbound-ports/x",
				"traffic.sidecar.istio.io/excludeoutboundports", "traffic.sidecar.istio.io/excludeOutboundPorts ", "traffic.sidecar.istio.io/excludeInterfaces",
				"traffic.sidecar.istio.io/includeOutboundPorts", "sidecar.istio.io/interceptionMode", "status.sidecar.istio.io/port", "proxy.istio.io/config",
				"config.linkerd.io/skip-outbound-ports ", "Config.linkerd.io/proxy-uid", "config.linkerd.io/admin-port", "config.linkerd.io/control-port",
				"traffic.kuma.io/exclude-outbound-ips ", "traffic.kuma.io/exclude-inbound-ips", "kuma.io/virtual-probes",
				"consul.hashicorp.com/transparent-proxy-exclude-inbound-ports ", "consul.hashicorp.com/transparent-proxy-outbound-listener-port",
			}
			for _, key := range near {
				for _, value := range []string{"22"} {
					a := annotations(key, value)
					add(fmt.Sprintf("annotation %q=%q on the injected pod", key, value), injectedWith(a))
					if p, err := in.inject(pod("p", a)); err == nil {
						add(fmt.Sprintf("annotation %q=%q, injected", key, value), p)
					}
				}
			}
			// The annotations that are read, with values that read as the
			// chart's or as nothing, on the pod injected without them.
			for _, key := range settingAnnotationKeys(t, values) {
				for _, value := range []string{"", " ", "*"} {
					add(fmt.Sprintf("annotation %q=%q on the injected pod", key, value), injectedWith(annotations(key, value)))
					add(fmt.Sprintf("annotation %q=%q, not injected", key, value), pod("p", annotations(key, value)))
				}
			}

			// meshinit's container with the injector's arguments, anything else changed.
			fieldRef := func(name, path, version string) corev1.EnvVar {
				return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: version, FieldPath: path}}}
			}
			forgedCases := map[string]podOption{
				"command":               forged(func(c *corev1.Container) { c.Command = []string{"/bin/sh", "-c", "true"} }),
				"workingDir":            forged(func(c *corev1.Container) { c.WorkingDir = "/tmp" }),
				"restartPolicy Always":  forged(func(c *corev1.Container) { c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways) }),
				"envFrom":               forged(func(c *corev1.Container) { c.EnvFrom = []corev1.EnvFromSource{{Prefix: "X"}} }),
				"no env":                forged(func(c *corev1.Container) { c.Env = nil }),
				"env reordered":         forged(func(c *corev1.Container) { slices.Reverse(c.Env) }),
				"env with value too":    forged(func(c *corev1.Container) { c.Env[0].Value = "x" }),
				"env apiVersion empty":  forged(func(c *corev1.Container) { c.Env[0].ValueFrom.FieldRef.APIVersion = "" }),
				"env apiVersion v2":     forged(func(c *corev1.Container) { c.Env[0].ValueFrom.FieldRef.APIVersion = "v2" }),
				"env of another field":  forged(func(c *corev1.Container) { c.Env[1] = fieldRef(c.Env[1].Name, "metadata.annotations['x']", "v1") }),
				"env one more":          forged(func(c *corev1.Container) { c.Env = append(c.Env, corev1.EnvVar{Name: "HTTP_PROXY", Value: "x"}) }),
				"env from a secret too": forged(func(c *corev1.Container) { c.Env[2].ValueFrom.SecretKeyRef = &corev1.SecretKeySelector{Key: "k"} }),
				"env names lowercase": forged(func(c *corev1.Container) {
					for i := range c.Env {
						c.Env[i].Name = strings.ToLower(c.Env[i].Name)
					}
				}),
				"mount read-write": forged(func(c *corev1.Container) { c.VolumeMounts[0].ReadOnly = false }),
				"mount subPath":    forged(func(c *corev1.Container) { c.VolumeMounts[0].SubPath = "x" }),
				"mount propagation": forged(func(c *corev1.Container) {
					c.VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationHostToContainer)
				}),
				"mount at another path": forged(func(c *corev1.Container) { c.VolumeMounts[0].MountPath = "/var/run/secrets" }),
				"mount one more": forged(func(c *corev1.Container) {
					c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "x", MountPath: "/x"})
				}),
				"no mount":                 forged(func(c *corev1.Container) { c.VolumeMounts = nil }),
				"image of the attacker":    forged(func(c *corev1.Container) { c.Image = "attacker/redirect" }),
				"privileged":               forged(func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)} }),
				"stdin and tty":            forged(func(c *corev1.Container) { c.Stdin, c.TTY = true, true }),
				"an argument appended":     forged(func(c *corev1.Container) { c.Args = append(c.Args, "--exclude-outbound-ports=22") }),
				"an argument dropped":      forged(func(c *corev1.Container) { c.Args = c.Args[:len(c.Args)-1] }),
				"arguments swapped":        forged(func(c *corev1.Container) { c.Args[1], c.Args[2] = c.Args[2], c.Args[1] }),
				"an argument with a space": forged(func(c *corev1.Container) { c.Args[len(c.Args)-1] += " " }),
				"the first argument run":   forged(func(c *corev1.Container) { c.Args[0] = "run" }),
				"token volume in memory": func(p *corev1.Pod) {
					for i := range p.Spec.Volumes {
						if p.Spec.Volumes[i].EmptyDir != nil {
							p.Spec.Volumes[i].EmptyDir.Medium = corev1.StorageMediumMemory
						}
					}
				},
				"token volume gone": func(p *corev1.Pod) { p.Spec.Volumes = nil },
				"not at its placement": func(p *corev1.Pod) {
					p.Spec.InitContainers = append([]corev1.Container{{Name: "before", Image: "app", SecurityContext: hardened()}}, p.Spec.InitContainers...)
					p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "after", Image: "app", SecurityContext: hardened()})
				},
				"a second meshinit-redirect with other arguments": func(p *corev1.Pod) {
					second := redirectContainer(p).DeepCopy()
					second.Args = slices.Clone(second.Args)
					for i, a := range second.Args {
						if strings.HasPrefix(a, "--exclude-outbound-ports=") {
							second.Args[i] = "--exclude-outbound-ports=1-65535"
						}
					}
					p.Spec.InitContainers = append(p.Spec.InitContainers, *second)
				},
				"an app container with NET_ADMIN":     addCapabilities("app", "NET_ADMIN"),
				"an app container as the proxy's UID": runAsUser("app", 1337),
				"an app container as the proxy's GID": runAsGroup("app", 1337),
				"the pod as the proxy's UID":          podSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsUser = ptr.To[int64](1337) }),
				"hostNetwork":                         hostNetwork,
				"opted out":                           labels(podLabel, "false"),
				"a hostPath volume": func(p *corev1.Pod) {
					p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
				},
				"an app container as UID 2102 (linkerd)": runAsUser("app", 2102),
				"an app container as UID 5678 (kuma)":    runAsUser("app", 5678),
				"an app container as UID 5995 (consul)":  runAsUser("app", 5995),
			}
			for _, name := range slices.Sorted(maps.Keys(forgedCases)) {
				cases = append(cases, adversarialCase{name: "injected, then " + name, obj: injectedWith(forgedCases[name]), literals: true})
			}
			// Arguments each one character away from the injector's.
			for i := range defaultArgs {
				for _, change := range []func(string) string{
					func(s string) string { return s + "," },
					func(s string) string { return s + "0" },
					func(s string) string { return strings.ToUpper(s) },
					func(s string) string { return strings.TrimSuffix(s, s[len(s)-1:]) },
				} {
					p := injectedWith(forged(func(c *corev1.Container) { c.Args[i] = change(c.Args[i]) }))
					cases = append(cases, adversarialCase{name: fmt.Sprintf("argument %d %q", i, redirectContainer(p).Args[i]), obj: p, literals: true})
				}
			}

			// Workload templates: as the pod, injected (forged, the webhook
			// never injects templates) or not, with and without a setting.
			for _, w := range workloads {
				cases = append(cases, adversarialCase{name: w.kind + " of the injected pod", obj: w.of(injectedWith()), literals: true})
				add(w.kind+" of the pod", w.of(pod("p")))
				add(w.kind+" of the injected pod, an argument forged", w.of(injectedWith(withArg("exclude-outbound-ports", "22"))))
				add(w.kind+" of the pod annotated", w.of(pod("p", annotations(excludeOutbound, "22"))))
				add(w.kind+" of the injected pod, an app with NET_ADMIN", w.of(injectedWith(addCapabilities("app", "NET_ADMIN"))))
			}

			// UPDATEs of the injected pod: an ephemeral container added, an
			// image changed, an annotation added on the way.
			ephemeral := func(sc *corev1.SecurityContext) podOption {
				return func(p *corev1.Pod) {
					p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
						EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", SecurityContext: sc},
					})
				}
			}
			netAdmin := hardened()
			netAdmin.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
			for name, opt := range map[string]podOption{
				"a hardened ephemeral container":         ephemeral(hardened()),
				"an ephemeral container with NET_ADMIN":  ephemeral(netAdmin),
				"an ephemeral container, no context":     ephemeral(nil),
				"the app's image":                        func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" },
				"an annotation that sets a list":         annotations(excludeOutbound, "22"),
				"meshinit's arguments":                   withArg("exclude-outbound-ports", "22"),
				"an ephemeral container and annotations": func(p *corev1.Pod) { ephemeral(hardened())(p); annotations("example.com/x", "y")(p) },
			} {
				cases = append(cases, adversarialCase{name: "UPDATE: " + name, obj: injectedWith(opt), old: injectedWith()})
			}

			admitted, shortcut := compareShortcut(t, withShortcut, without, fieldByField, cases)
			t.Logf("%d objects x %d RedirectPolicies: %d admitted; %d objects through the shortcut", len(cases), len(adversarialParams()), admitted, shortcut)
		})
	}
}

// settingAnnotationKeys are the annotations the policy reads as a setting
// for values: its settingsAsChart list.
func settingAnnotationKeys(t *testing.T, values map[string]any) []string {
	t.Helper()
	keys := meshSettingAnnotations(t, values)
	for _, a := range []string{includeInbound, excludeInbound, excludeOutbound, includeOutbound, includeCIDRs, excludeCIDRs, excludeUIDs, excludeGIDs,
		excludeInterfaces, proxyUIDAnnotation, proxyGIDAnnotation, outboundProxyPortAnnotation, inboundProxyPortAnnotation, captureDNSAnnotation, dnsProxyPortAnnotation} {
		keys = append(keys, a)
	}
	return keys
}

// TestSettingsAsChartChartIDs: the shortcut takes the chart's proxy ports,
// UID and GID as they are written (variables.proxyUID...), the full
// evaluation reads them from meshinit's container's arguments as the
// redirector would. They agree for every value the chart accepts, down to
// the bounds; an ID above 4294967294 (the redirector cannot read it), which
// the schema took as a string of up to 10 digits, made the full evaluation
// deny, as "a value that cannot be read", a pod or pod template with the
// injector's own arguments that the shortcut admitted: the chart must
// refuse it, or the shortcut agree.
func TestSettingsAsChartChartIDs(t *testing.T) {
	for _, tc := range []struct {
		key      string
		value    any
		readable bool // the chart must render it
	}{
		{"proxy-uid", "0", true}, {"proxy-gid", "4294967294", true}, {"proxy-uid", int64(4294967294), true},
		{"dns-proxy-port", "65535", true}, {"outbound-proxy-port", 1, true},
		{"proxy-uid", "4294967295", false}, {"proxy-uid", "9999999999", false},
		{"proxy-gid", "4294967295", false}, {"proxy-gid", "9999999999", false},
	} {
		t.Run(fmt.Sprintf("%s=%v", tc.key, tc.value), func(t *testing.T) {
			values := map[string]any{"inject": map[string]any{"redirect": map[string]any{tc.key: tc.value}}}
			if _, err := charts.Objects(charts.Options{Namespace: releaseNamespace, Values: values}, false); err != nil {
				if tc.readable {
					t.Fatal(err)
				}
				t.Logf("the chart refuses %s %q: %v", tc.key, tc.value, err)
				return
			}
			withShortcut, without, fieldByField := shortcutPolicies(t, values)
			// meshinit's container with the arguments the injector writes
			// for these values (a pod author can write them too).
			p := pod("p", injected)
			var defaultArgs []string
			withShortcut.eval(t, request{object: p, namespace: inNamespace, params: adversarialParams()[0]}, []string{"variables.defaultArgs"}, &defaultArgs)
			redirectContainer(p).Args = defaultArgs
			cases := []adversarialCase{{name: "pod", obj: p, literals: true}}
			for _, w := range workloads {
				cases = append(cases, adversarialCase{name: w.kind, obj: w.of(p), literals: true})
			}
			compareShortcut(t, withShortcut, without, fieldByField, cases)
		})
	}
}
