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
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// capabilityPod has 110 containers (10 init), each adding 16 and dropping
// 64 capability names of names(i), the most the container rules
// (policy-containers.tpl) read before they refuse a list outright.
func capabilityPod(names func(i int) string) *corev1.Pod {
	caps := make([]corev1.Capability, 64)
	return pod("caps", injected, containers(100), func(p *corev1.Pod) {
		for i := range 10 {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init-%d", i), Image: "init"})
		}
		for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				if list[i].Name == initContainerName {
					continue
				}
				for j := range caps {
					caps[j] = corev1.Capability(names(j))
				}
				list[i].SecurityContext = &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Add: append([]corev1.Capability{}, caps[:16]...), Drop: append([]corev1.Capability{"ALL"}, caps[1:]...)},
				}
			}
		}
	})
}

// TestCostOfContainerRules: the container rules' cost for the pods that
// make them work most (every capability list at the most names the rules
// read, ASCII or not, long or not) stays under a tenth of an evaluation's
// budget, refused with the rules' own message, not a cost error (which
// policy.failurePolicy Ignore would admit). Run with -v for the figures.
func TestCostOfContainerRules(t *testing.T) {
	c := compile(t, chartPolicy(t, testValues()))
	params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	ns := namespace("team", namespaceLabel, "enabled")
	for _, tc := range []struct {
		name  string
		names func(i int) string
		want  string
	}{
		{"ASCII names", func(i int) string { return "CAP_" + strings.Repeat("X", 28) },
			"pod container init-0 must not add capability "},
		{"names not ASCII", func(i int) string { return strings.Repeat("ı", 32) },
			"pod container init-0 must name capabilities in ASCII only"},
		{"names too long", func(i int) string { return strings.Repeat("A", 1024) },
			"pod container init-0 must name capabilities in ASCII only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := capabilityPod(tc.names)
			r := request{object: p, namespace: ns, params: params}
			denied := c.denials(t, r)
			if len(denied) == 0 || !strings.HasPrefix(denied[0], tc.want) {
				t.Fatalf("denied with %q, want a message starting %q", denied, tc.want)
			}
			validations, messages := c.cost(t, r)
			logCost(t, tc.name, validations, messages)
			if used := validations + messages; used > celconfig.RuntimeCELCostBudget/10 {
				t.Errorf("cost %d is more than a tenth of the budget %d", used, celconfig.RuntimeCELCostBudget)
			}
		})
	}
}
