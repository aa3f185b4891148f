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
	"cmp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionPolicyInjector runs TestAdmission's cases against the chart
// in policy mode (the same values): what the RedirectPolicy enforces holds
// as it does with the webhook running. The policies inject the pods the
// webhook would, so a pod that arrives without meshinit's init container
// gets it; they refuse, with the webhook's message, what the webhook would
// refuse (a label or setting it cannot use), and the RedirectPolicy's policy
// leaves those pods to that refusal; every other pod, and every pod
// template (never injected), gets TestAdmission's verdict.
func TestAdmissionPolicyInjector(t *testing.T) {
	c := injectorAPIServer(t)
	if c == nil {
		return
	}
	tw := newTwins(t, testValues())
	refused := 0
	for _, tc := range admissionCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			switch web := tw.byWebhook(t, clusterNamespaces[tc.namespace], tc.pod); {
			case web.Denied != "":
				want = verdict{injectName, web.Denied, metav1.StatusReasonForbidden}
				refused++
			case tc.podOnly:
				want = verdict{}
			}
			c.checkCase(t, tc.namespace, tc.pod, want, tc.want, tc.podOnly)
		})
	}
	if refused == 0 {
		t.Error("no case is one the injector refuses: the test checks too little")
	}
}

// TestForgedContainersReplaced: in policy mode every pod of
// TestMeshinitContainer's cases (a meshinit-redirect init container that is
// not meshinit's: another image, a command, other arguments, env, mounts,
// not first, ...) is admitted with meshinit's container in its place, first:
// the one the same pod gets without any; the pod's other init containers
// stay, in their order.
func TestForgedContainersReplaced(t *testing.T) {
	c := injectorAPIServer(t)
	if c == nil {
		return
	}
	for _, tc := range containerCases {
		t.Run(tc.name, func(t *testing.T) {
			without := tc.pod.DeepCopy()
			without.Spec.InitContainers = otherInits(without)
			ns := cmp.Or(tc.namespace, "team-a")
			if err := c.createDryRun(ns, without); err != nil {
				t.Fatalf("the pod without meshinit-redirect refused: %v", err)
			}
			p := tc.pod.DeepCopy()
			if err := c.createDryRun(ns, p); err != nil {
				t.Fatalf("refused: %v", err)
			}
			want := without.Spec.InitContainers[0]
			if at := containerAt(tc.pod); at >= 0 && defaultPullPolicy(tc.pod.Spec.InitContainers[at]) == corev1.PullAlways {
				// Kept as the webhook keeps it: AlwaysPullImages would refuse
				// a pod whose container lost it.
				want.ImagePullPolicy = corev1.PullAlways
			}
			if got := p.Spec.InitContainers[0]; !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("first init container %+v\nwant meshinit's %+v", got, want)
			}
			if got, want := names(p.Spec.InitContainers), names(without.Spec.InitContainers); !slices.Equal(got, want) {
				t.Errorf("init containers %v, want %v", got, want)
			}
		})
	}
}

// containerAt is the index of the pod's meshinit-redirect init container.
func containerAt(p *corev1.Pod) int {
	return slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == initContainerName })
}

// defaultPullPolicy is the imagePullPolicy the API server gives c: its own,
// or Always for an image without a tag or tagged latest (and no digest).
func defaultPullPolicy(c corev1.Container) corev1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	ref := c.Image[strings.LastIndex(c.Image, "/")+1:]
	if strings.Contains(ref, "@") {
		return corev1.PullIfNotPresent
	}
	if i := strings.LastIndex(ref, ":"); i < 0 || ref[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// otherInits are the pod's init containers but meshinit-redirect.
func otherInits(p *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range p.Spec.InitContainers {
		if c.Name != initContainerName {
			out = append(out, c)
		}
	}
	return out
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestKubectlDryRunPolicyInjector: `kubectl apply --dry-run=server -o yaml`
// shows the pod the policies inject, and stores nothing; a pod with a bad
// annotation gets the webhook's message.
func TestKubectlDryRunPolicyInjector(t *testing.T) {
	c := injectorAPIServer(t)
	if c == nil {
		return
	}
	stdout, stderr, err := c.Kubectl(manifest(t, pod("dry-plain")), "apply", "--dry-run=server", "-n", "team-a", "-o", "yaml", "-f", "-")
	if err != nil || !strings.Contains(stdout, "name: "+initContainerName) || !strings.Contains(stdout, "meshinit.io/status:") || !strings.Contains(stdout, "- --proxy-uid=1337") {
		t.Errorf("kubectl apply --dry-run=server: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	bad := pod("dry-bad", annotations(excludeOutbound, "5432-"))
	_, stderr, err = c.Kubectl(manifest(t, bad), "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
	want := `Error from server (Forbidden): error when creating "STDIN": pods "dry-bad" is forbidden: ValidatingAdmissionPolicy 'meshinit-inject' with binding 'meshinit-inject' denied request: ` +
		`meshinit: pod not injected: invalid annotation traffic.meshinit.io/exclude-outbound-ports "5432-": "5432-" is not a port number or range (want 1-65535, or first-last)`
	if err == nil || strings.TrimSpace(stderr) != want {
		t.Errorf("a bad annotation: %v\nstderr: %s\nwant:   %s", err, stderr, want)
	}
	for _, name := range []string{"dry-plain", "dry-bad"} {
		if _, stderr, err := c.Kubectl("", "get", "pod", "-n", "team-a", name); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("pod %s was stored by a dry run: %v %s", name, err, stderr)
		}
	}
}
