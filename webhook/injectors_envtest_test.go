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
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// mapAPI is what the chart needs to render injector: policy.
const mapAPI = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"

// created is what creating a pod (dry run) gave its client: the pod as the
// API server would store it, or the refusal, and the warnings. The two
// injectors word their admission messages alike; the API server puts its own
// prefix before them (which names a webhook or a policy): the prefix is
// dropped (see refusalPrefix, warningPrefix).
type created struct {
	Pod      map[string]any `json:",omitempty"`
	Code     int32          `json:",omitempty"`
	Reason   string         `json:",omitempty"`
	Message  string         `json:",omitempty"`
	Warnings []string       `json:",omitempty"`
}

var (
	// refusalPrefix is the API server's beginning of a refusal by a webhook
	// (`admission webhook "..." denied the request: `) or a validating policy
	// (`pods "p" is forbidden: ValidatingAdmissionPolicy '...' with binding
	// '...' denied request: `).
	refusalPrefix = regexp.MustCompile(`^(admission webhook "[^"]+" denied the request|.* is forbidden: ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied request): `)
	// warningPrefix begins a validating policy's warning (a webhook's has
	// none).
	warningPrefix = regexp.MustCompile(`^Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': `)
)

// create creates pod (dry run) in ns as the admin and records what the
// client saw.
func (c *cluster) create(t *testing.T, ns string, pod []byte) created {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal(pod, &p); err != nil {
		t.Fatal(err)
	}
	c.warnings.take()
	stored, err := c.admin.CoreV1().Pods(ns).Create(context.Background(), &p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var out created
	for _, w := range c.warnings.take() {
		out.Warnings = append(out.Warnings, warningPrefix.ReplaceAllString(w, ""))
	}
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &status):
		s := status.Status()
		out.Code, out.Reason, out.Message = s.Code, string(s.Reason), refusalPrefix.ReplaceAllString(s.Message, "")
		return out
	case err != nil:
		t.Fatalf("creating a pod in %s: %v", ns, err)
	}
	m, err := runtimeToMap(stored)
	if err != nil {
		t.Fatal(err)
	}
	tokenVolumes.rename(m)
	// What differs between any two creates, injected or not.
	meta := m["metadata"].(map[string]any)
	for _, k := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields"} {
		delete(meta, k)
	}
	if p.GenerateName != "" {
		delete(meta, "name")
	}
	out.Pod = m
	return out
}

// status is the created pod's status annotation, "" without one.
func (c created) status() string {
	meta, _ := c.Pod["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	s, _ := annotations[webhook.StatusAnnotation].(string)
	return s
}

// tokenVolumes names the API token volume the ServiceAccount admission
// plugin adds (kube-api-access-<five random characters>) the same in every
// pod, so that two creates of one pod compare equal.
var tokenVolumes = volumeRenamer{regexp.MustCompile(`^kube-api-access-[a-z0-9]{5}$`), "kube-api-access-random"}

type volumeRenamer struct {
	name *regexp.Regexp
	to   string
}

// rename renames, in the pod m, each volume and volume mount whose name
// matches.
func (r volumeRenamer) rename(m map[string]any) {
	spec, _ := m["spec"].(map[string]any)
	named := func(list any) {
		items, _ := list.([]any)
		for _, item := range items {
			if o, ok := item.(map[string]any); ok {
				if n, _ := o["name"].(string); r.name.MatchString(n) {
					o["name"] = r.to
				}
			}
		}
	}
	named(spec["volumes"])
	for _, key := range []string{"initContainers", "containers"} {
		cs, _ := spec[key].([]any)
		for _, c := range cs {
			if c, ok := c.(map[string]any); ok {
				named(c["volumeMounts"])
			}
		}
	}
}

func runtimeToMap(p *corev1.Pod) (map[string]any, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// probe namespaces: opted in, and opted in where PodSecurity baseline is
// enforced. A probe pod shows which injector is in effect.
const (
	probeNS         = "probe"
	probeBaselineNS = "probe-baseline"
)

func probePod(labels map[string]string) []byte {
	b, _ := json.Marshal(testPod("probe", labels, nil))
	return b
}

// statusOf is the status annotation a pod injected with the chart's config
// file in objs carries.
func statusOf(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	var cm corev1.ConfigMap
	charts.DecodeOne(t, objs, "ConfigMap", "meshinit-webhook", &cm)
	return webhook.Status{InitContainers: []string{webhook.ContainerName}, Config: webhook.ConfigHash([]byte(cm.Data["config.yaml"]))}.String()
}

// awaitNoInjector waits until nothing injects or refuses pods.
func (c *cluster) awaitNoInjector(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, "no injector in effect", func() error {
		for _, p := range []created{c.create(t, probeNS, probePod(nil)), c.create(t, probeNS, probePod(map[string]string{webhook.PodLabel: "yes"})),
			c.create(t, probeBaselineNS, probePod(nil))} {
			if p.Pod == nil || len(p.Warnings) > 0 || p.status() != "" {
				return fmt.Errorf("a probe pod: %+v", p)
			}
		}
		return nil
	})
}

// TestPolicyInjectorAgrees runs every pod of the webhook's golden corpus
// (testdata/pods, each with its configuration as the chart's inject
// values) through both injectors the chart renders, on a real API server
// (dry-run creates): the webhook (webhook.Serve behind the chart's
// MutatingWebhookConfiguration) and the policies (the chart's
// MutatingAdmissionPolicy and ValidatingAdmissionPolicies, with nothing
// else). Each pod must come out the same, as the API server would store it
// (init containers with every field, their placement, forged ones replaced,
// misplaced ones moved, the status annotation, defaults), or be refused the
// same way (code, reason, message after the API server's prefix), with the
// same warnings (after the prefix).
//
// One difference is expected and checked for what it is: in a namespace
// enforcing PodSecurity restricted, with inject.podSecurity deny, a
// pod that restricted refuses on its own is refused by PodSecurity before
// the validating policy runs (the webhook refuses it earlier, while
// mutating): PodSecurity's message, not meshinit's.
func TestPolicyInjectorAgrees(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	if !servesMAP(t, c) {
		return
	}
	corpus := webhook.Corpus(t)
	createNamespace(t, c.admin, probeNS, map[string]string{webhook.NamespaceLabel: "enabled"})
	createNamespace(t, c.admin, probeBaselineNS, map[string]string{webhook.NamespaceLabel: "enabled", webhook.EnforceLabel: "baseline"})
	// Each case's namespace: its own, with its labels, but kube-system and
	// the release namespace keep their names.
	nsOf := map[string]string{}
	for i, tc := range corpus {
		switch tc.Namespace {
		case "kube-system", releaseNamespace:
			nsOf[tc.Name] = tc.Namespace
			ns, err := c.admin.CoreV1().Namespaces().Get(ctx, tc.Namespace, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			maps.Copy(ns.Labels, tc.NamespaceLabels)
			if _, err := c.admin.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		default:
			nsOf[tc.Name] = fmt.Sprintf("case-%d", i)
			createNamespace(t, c.admin, nsOf[tc.Name], tc.NamespaceLabels)
		}
	}
	// The cases by configuration, in the corpus's order.
	var configs []string
	byConfig := map[string][]webhook.CorpusCase{}
	for _, tc := range corpus {
		key, _ := json.Marshal(tc.Inject)
		if _, ok := byConfig[string(key)]; !ok {
			configs = append(configs, string(key))
		}
		byConfig[string(key)] = append(byConfig[string(key)], tc)
	}

	cl, err := client.New(c.server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string]created{"webhook": {}, "policy": {}}
	for i, key := range configs {
		var inject map[string]any
		if err := json.Unmarshal([]byte(key), &inject); err != nil {
			t.Fatal(err)
		}
		values := map[string]any{"inject": inject}
		cases := byConfig[key]
		run := func(t *testing.T, mode string) {
			for _, tc := range cases {
				results[mode][tc.Name] = c.create(t, nsOf[tc.Name], tc.Pod)
			}
		}
		t.Run(fmt.Sprintf("webhook, configuration %d", i), func(t *testing.T) {
			c.objects = charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: values}, false)
			status := statusOf(t, c.objects)
			c.serveInCluster(t, 0)
			testkit.Eventually(t, 60*time.Second, "the webhook in effect", func() error {
				if got := c.create(t, probeNS, probePod(nil)); got.status() != status {
					return fmt.Errorf("probe pod %+v, want status %s", got, status)
				}
				return nil
			})
			run(t, "webhook")
		})
		c.awaitNoInjector(t)
		t.Run(fmt.Sprintf("policy, configuration %d", i), func(t *testing.T) {
			objs := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: map[string]any{"injector": "policy", "inject": values["inject"]},
				APIVersions: []string{mapAPI}}, false)
			status := statusOf(t, objs)
			var installed []client.Object
			for _, o := range objs {
				if strings.HasPrefix(o.GetName(), "meshinit-inject") {
					if err := cl.Create(ctx, o); err != nil {
						t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
					}
					installed = append(installed, o)
				}
			}
			if len(installed) != 9 {
				t.Fatalf("%d objects of the policy injector, want 9 (three policies, each bound twice with the two opt-in selectors)", len(installed))
			}
			t.Cleanup(func() {
				for _, o := range installed {
					if err := cl.Delete(ctx, o); err != nil {
						t.Error(err)
					}
				}
			})
			deny := inject["podSecurity"] == "deny"
			testkit.Eventually(t, 60*time.Second, "the policies in effect", func() error {
				if got := c.create(t, probeNS, probePod(nil)); got.status() != status {
					return fmt.Errorf("probe pod %+v, want status %s", got, status)
				}
				if got := c.create(t, probeNS, probePod(map[string]string{webhook.PodLabel: "yes"})); !strings.Contains(got.Message, "invalid label") {
					return fmt.Errorf("probe pod labelled yes: %+v", got)
				}
				got := c.create(t, probeBaselineNS, probePod(nil))
				if deny && !strings.Contains(got.Message, "enforces PodSecurity") || !deny && len(got.Warnings) == 0 {
					return fmt.Errorf("probe pod where baseline is enforced: %+v", got)
				}
				return nil
			})
			run(t, "policy")
		})
		c.awaitNoInjector(t)
	}

	outcomes := map[string]int{}
	for _, tc := range corpus {
		web, pol := results["webhook"][tc.Name], results["policy"][tc.Name]
		switch {
		case web.status() != "":
			outcomes["injected"]++
		case web.Pod != nil:
			outcomes["admitted uninjected"]++
		default:
			outcomes["refused"]++
		}
		if len(web.Warnings) > 0 {
			outcomes["with a warning"]++
		}
		if tc.NamespaceLabels[webhook.EnforceLabel] == "restricted" && tc.Inject["podSecurity"] == "deny" {
			if !strings.Contains(web.Message, "pod not injected: namespace") || !strings.Contains(pol.Message, `violates PodSecurity "restricted`) {
				t.Errorf("%s: webhook %+v\npolicy %+v\nwant meshinit's refusal and PodSecurity's (the pod violates restricted on its own)", tc.Name, web, pol)
			}
			continue
		}
		w, _ := json.MarshalIndent(web, "", "  ")
		p, _ := json.MarshalIndent(pol, "", "  ")
		if string(w) != string(p) {
			t.Errorf("%s: the injectors differ:\nwebhook %s\npolicy  %s", tc.Name, w, p)
		}
	}
	keys := slices.Sorted(maps.Keys(outcomes))
	var summary []string
	for _, k := range keys {
		summary = append(summary, fmt.Sprintf("%s %d", k, outcomes[k]))
	}
	t.Logf("%d cases in %d configurations, by the webhook: %s", len(corpus), len(configs), strings.Join(summary, ", "))
}

// servesMAP says whether the API server serves mapAPI. Where it does not
// (the older API servers of make test-matrix) there is no policy injector
// to compare: it checks that the chart, rendered for that server's version
// and APIs, refuses injector: policy (charts' policyInjectorServed checks
// Helm's install against a server), and the caller's test ends there.
func servesMAP(t *testing.T, c *cluster) bool {
	t.Helper()
	resources, err := c.admin.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources.APIResources {
		if r.Kind == "MutatingAdmissionPolicy" {
			return true
		}
	}
	version := fmt.Sprintf("v1.%d.0", c.server.Minor)
	_, err = charts.Render(charts.Options{Namespace: releaseNamespace, KubeVersion: version, Values: map[string]any{"injector": "policy"}})
	if want := "injector=policy needs an API server that serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("the chart rendered with injector=policy for Kubernetes %s: error %v, want one containing %q", version, err, want)
	}
	t.Logf("Kubernetes 1.%d does not serve MutatingAdmissionPolicy v1, and the chart refuses injector=policy for it: no policy injector to compare", c.server.Minor)
	return false
}
