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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/pod-security-admission/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// The trust policy (trust-redirector.yaml) where a pod enters a scope of
// meshinit's policies after it was created, and for templates: the cases a
// red-team read of the policy found open, each with a control showing that
// the binding it needs was in effect.

// redteamEvil is an image no release of meshinit trusts.
const redteamEvil = "registry.example/not-meshinit:0.1.0"

// evilRedirect is a pod whose meshinit-redirect is exactly what the webhook
// writes (arguments, env, mount, securityContext with NET_ADMIN and NET_RAW)
// except its image.
func evilRedirect(name string, opts ...podOption) *corev1.Pod {
	return pod(name, append([]podOption{injected, forged(func(c *corev1.Container) { c.Image = redteamEvil })}, opts...)...)
}

// labelNamespace sets labels on namespace ns (an administrator's change).
func (c *cluster) labelNamespace(t *testing.T, ns string, kv ...string) {
	t.Helper()
	var n corev1.Namespace
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	n.Labels = merge(n.Labels, kv)
	if err := c.client.Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
}

func appImage(image string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Image = image }
}

// TestTrustScopeEntered: a pod admitted where no policy of meshinit's looked
// at it, with a meshinit-redirect whose image is not meshinit's, then
// brought into a scope (its own meshinit.io/inject label, which its author
// controls; or a namespace label an administrator adds later). The
// RedirectPolicy's policy and the PodSecurity guard recognise the container
// without reading its image, so the trust policy checks every update they
// check (one that changes a container) and, for the labelled scope, the
// label change itself: the forged container is never taken for meshinit's
// (intercepted; exempt from the capabilities check).
func TestTrustScopeEntered(t *testing.T) {
	c := apiServer(t)

	t.Run("own label meshinit.io/inject=true added after create", func(t *testing.T) {
		// "plain": no label; nothing of meshinit's looks at an unlabelled pod.
		c.createFor(t, "plain", evilRedirect("rt-late-label"))
		c.createFor(t, "plain", pod("rt-late-label-control"))
		// Labelling the control changes nothing that runs: not checked.
		if got, err := c.updatePod("plain", "rt-late-label-control", func(p *corev1.Pod) { p.Labels[podLabel] = "true" }); err != nil || got != (verdict{}) {
			t.Fatalf("labelling the control: %+v, %v", got, err)
		}
		got, err := c.updatePod("plain", "rt-late-label-control", appImage("app:v2"))
		if err != nil || got.binding != clusterBinding+labelledSuffix {
			t.Fatalf("control (no meshinit-redirect), app image changed: %+v, %v; want refused by %s", got, err, clusterBinding+labelledSuffix)
		}
		// Labelling the pod with the forged container moves it into the
		// labelled scope: refused.
		got, err = c.updatePod("plain", "rt-late-label", func(p *corev1.Pod) { p.Labels[podLabel] = "true" })
		if want := (verdict{trustName + "-labelled", msgUntrusted(redteamEvil), metav1.StatusReasonForbidden}); err != nil || got != want {
			t.Errorf("labelling plain/rt-late-label (meshinit-redirect image %s):\n got  %+v, %v\n want %+v", redteamEvil, got, err, want)
		}
	})

	t.Run("labelled pod's redirector swapped while unlabelled", func(t *testing.T) {
		// A pod injected as the webhook injects it (labelled, in "plain"),
		// held by a scheduling gate so nothing has run yet.
		p := pod("rt-swap", labels(podLabel, "true"), injected, func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
		})
		c.createFor(t, "plain", p)
		// The swap while labelled is refused (the trust policy's -labelled binding).
		if got, err := c.updatePod("plain", "rt-swap", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = redteamEvil }); err != nil || got.binding != trustName+"-labelled" {
			t.Fatalf("swap while labelled: %+v, %v; want refused by %s-labelled", got, err, trustName)
		}
		// Unlabelled, nothing of meshinit's looks at it: the label goes and the
		// image is swapped; putting the label back is refused.
		refused := verdict{trustName + "-labelled", msgUntrusted(redteamEvil), metav1.StatusReasonForbidden}
		for _, s := range []struct {
			what   string
			change func(p *corev1.Pod)
			want   verdict
		}{
			{"label removed", func(p *corev1.Pod) { delete(p.Labels, podLabel) }, verdict{}},
			{"meshinit-redirect's image swapped", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = redteamEvil }, verdict{}},
			{"label back", func(p *corev1.Pod) { p.Labels[podLabel] = "true" }, refused},
		} {
			if got, err := c.updatePod("plain", "rt-swap", s.change); err != nil || got != s.want {
				t.Fatalf("%s:\n got  %+v, %v\n want %+v", s.what, got, err, s.want)
			}
		}
	})

	// A namespace an administrator labels after the pods exist: the
	// control (a pod the other policy refuses on its next container update)
	// shows when the label is in effect; then the forged pod's container
	// update is refused by the trust policy's binding for that scope.
	guardControl := evilRedirect("rt-control")
	guardControl.Spec.InitContainers[0].Name = "not-meshinit" // the same container under another name
	for _, tc := range []struct {
		name, ns        string
		created         []string // the namespace's labels when the pods are created
		label           []string // the label added after
		control         *corev1.Pod
		controlRefuser  string // the binding that refuses the control once labelled
		trustingBinding string
	}{
		{"namespace labelled meshinit.io/injection=enabled after create", "rt-late-injection", nil,
			[]string{namespaceLabel, "enabled"}, pod("rt-control"), clusterBinding, trustNamespaceBinding},
		{"namespace labelled meshinit.io/pod-security=baseline after create", "rt-late-guard", []string{api.EnforceLevelLabel, string(api.LevelPrivileged)},
			[]string{podSecurityLabel, string(api.LevelBaseline)}, guardControl, guardName, trustName + "-pod-security"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Deleted, it is never finalized here (no namespace controller): a
			// later run (go test -count=N) takes another name.
			ns := testkit.RunName(tc.ns)
			c.createNamespace(t, namespace(ns, tc.created...))
			t.Cleanup(func() { _ = c.client.Delete(context.Background(), namespace(ns)) })
			c.createFor(t, ns, evilRedirect("rt-evil"))
			c.createFor(t, ns, tc.control.DeepCopy())
			c.labelNamespace(t, ns, tc.label...)
			n := 0
			testkit.Eventually(t, 30*time.Second, "the control refused once the namespace is labelled", func() error {
				n++
				got, err := c.updatePod(ns, "rt-control", appImage(fmt.Sprintf("app:v%d", n+1)))
				if err != nil || got.binding != tc.controlRefuser {
					return fmt.Errorf("control: %+v, %v", got, err)
				}
				return nil
			})
			got, err := c.updatePod(ns, "rt-evil", appImage("app:v2"))
			if want := (verdict{tc.trustingBinding, msgUntrusted(redteamEvil), metav1.StatusReasonForbidden}); err != nil || got != want {
				t.Errorf("pod %s/rt-evil (meshinit-redirect image %s, NET_ADMIN and NET_RAW), app image updated:\n got  %+v, %v\n want %+v", ns, redteamEvil, got, err, want)
			}
		})
	}
}

// TestTrustReplicationControllerTemplate: the guard's -templates binding
// warns about workloads' pod templates, ReplicationControllers among them;
// the trust policy matches them too, so an RC whose template has a
// meshinit-redirect of another image with NET_ADMIN and NET_RAW is refused
// in a guard namespace, as a Deployment of it is (its pods would be
// refused when created anyway).
func TestTrustReplicationControllerTemplate(t *testing.T) {
	c := apiServer(t)
	_, guarded := guardNamespaces(t, c, api.LevelBaseline)
	w := &warnings{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = w
	cl, err := client.New(cfg, client.Options{Scheme: c.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	rcOf := func(p *corev1.Pod) *corev1.ReplicationController {
		return &corev1.ReplicationController{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: guarded},
			Spec:       corev1.ReplicationControllerSpec{Selector: map[string]string{"app": p.Name}, Template: ptrTemplate(template(p))},
		}
	}
	create := func(p *corev1.Pod) (error, []string) {
		w.take()
		err := cl.Create(context.Background(), rcOf(p), client.DryRunAll)
		return err, w.take()
	}
	// The control: the same container under another name is warned about.
	control := evilRedirect("rt-rc-control")
	control.Spec.InitContainers[0].Name = "not-meshinit"
	if err, warned := create(control); err != nil || len(warned) == 0 {
		t.Fatalf("control ReplicationController: error %v, warnings %q; want a warning of the guard", err, warned)
	}
	err, warned := create(evilRedirect("rt-rc"))
	if got, verr := verdictOf(err); verr != nil || got.binding != trustName+"-pod-security" || got.message != msgUntrusted(redteamEvil) {
		t.Errorf("ReplicationController %s/rt-rc, template's meshinit-redirect image %s with NET_ADMIN and NET_RAW: %+v, %v (warnings %q); want refused by %s-pod-security", guarded, redteamEvil, got, verr, warned, trustName)
	}
}

func ptrTemplate(t corev1.PodTemplateSpec) *corev1.PodTemplateSpec { return &t }
