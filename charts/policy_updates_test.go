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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestContainerUpdates (issue 21, class 3: every write that changes what
// runs): on a pod created for real, with the webhook and with the policy
// injector, an update that swaps the trusted proxy's image, and ephemeral
// containers added through their subresource (kubectl debug) that could
// take the proxy's identity or reach netfilter, are refused with the fix
// they need; an app's new image and a hardened debugging container are
// admitted (the updates are checked, and pass).
func TestContainerUpdates(t *testing.T) {
	inEachInjector(t, testContainerUpdates)
}

func testContainerUpdates(t *testing.T, c *cluster) {
	ctx := context.Background()
	p := pod("updated-containers", injected, asProxy("envoy", envoyImage+":v1.30"))
	c.createFor(t, "team-a", p)
	debug := func(sc *corev1.SecurityContext, target string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", SecurityContext: sc},
				TargetContainerName:      target,
			})
		}
	}
	with := func(change func(sc *corev1.SecurityContext)) *corev1.SecurityContext {
		sc := hardened()
		change(sc)
		return sc
	}
	refused := func(name string, fixes ...string) verdict {
		return verdict{clusterBinding, strings.ReplaceAll(msgDefaultMust(name, fixes...), "SUBJECT", "pod"), metav1.StatusReasonForbidden}
	}
	for _, tc := range []struct {
		name        string
		subresource string
		change      func(p *corev1.Pod)
		want        verdict
	}{
		{"the trusted proxy's image swapped", "", func(p *corev1.Pod) { p.Spec.Containers[1].Image = envoyImage + "-debug:v1" }, refused("envoy", fixesAsProxy...)},
		{"an ephemeral container running as the proxy", "ephemeralcontainers", debug(&corev1.SecurityContext{RunAsUser: ptr.To[int64](1337)}, ""),
			refused("debug", fixesAsProxy...)},
		{"an ephemeral container adding NET_ADMIN", "ephemeralcontainers",
			debug(with(func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"NET_ADMIN"} }), ""), refused("debug", fixAdd("NET_ADMIN"))},
		{"an ephemeral container in the proxy's process namespace, keeping its capabilities", "ephemeralcontainers", debug(nil, "envoy"),
			refused("debug", fixAPE, fixDrop)},
		{"an ephemeral container in the proxy's process namespace adding KILL", "ephemeralcontainers",
			debug(with(func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"KILL"} }), "envoy"), refused("debug", fixKillTargeting)},
		{"an app's new image", "", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" }, verdict{}},
		{"a hardened ephemeral container in the proxy's process namespace", "ephemeralcontainers", debug(hardened(), "envoy"), verdict{}},
		// Admitted ephemeral containers stay: this one needs a name of its own.
		{"an ephemeral container adding KILL, in a process namespace of its own", "ephemeralcontainers", func(p *corev1.Pod) {
			debug(with(func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"KILL"} }), "")(p)
			p.Spec.EphemeralContainers[len(p.Spec.EphemeralContainers)-1].Name = "debug-kill"
		}, verdict{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got corev1.Pod
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
				t.Fatal(err)
			}
			tc.change(&got)
			var err error
			if tc.subresource == "" {
				err = c.client.Update(ctx, &got)
			} else {
				err = c.client.SubResource(tc.subresource).Update(ctx, &got)
			}
			v, err := verdictOf(err)
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want {
				t.Errorf("\n got  %+v\n want %+v", v, tc.want)
			}
		})
	}
}
