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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/pod-security-admission/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/testkit"
)

// TestTrustBoundWhereverRecognised: the RedirectPolicy's policy and the
// PodSecurity guard recognise meshinit's init container without reading its
// image, so the trust policy must be bound wherever either evaluates a pod.
// A meshinit-redirect as the webhook writes it but with another image is
// refused in a namespace that opts in, for a labelled pod elsewhere, and in a
// namespace the guard checks, each by the trust policy's binding for that
// scope; the same pod with the chart's image is admitted in each. Where no
// policy of meshinit's evaluates pods, the name is nobody's: admitted.
func TestTrustBoundWhereverRecognised(t *testing.T) {
	c := apiServer(t)
	_, guarded := guardNamespaces(t, c, api.LevelBaseline)
	const other = "registry.example/redirector:0.1.0"
	for _, tc := range []struct {
		name, namespace string
		opts            []podOption
		binding         string // "" when admitted
	}{
		{"a namespace that opts in", "team-a", nil, trustNamespaceBinding},
		{"a labelled pod elsewhere", "plain", []podOption{labels(podLabel, "true")}, trustName + "-labelled"},
		{"a namespace the guard checks", guarded, nil, trustName + "-pod-security"},
		{"nowhere meshinit's policies look", "plain", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append(tc.opts, injected)
			if err := c.createDryRun(tc.namespace, pod("ours", opts...)); err != nil {
				t.Errorf("with the chart's image: %v", err)
			}
			want := verdict{}
			if tc.binding != "" {
				want = verdict{tc.binding, msgUntrusted(other), metav1.StatusReasonForbidden}
			}
			got, err := verdictOf(c.createDryRun(tc.namespace, pod("other", append(opts, forged(func(c *corev1.Container) { c.Image = other }))...)))
			if err != nil || got != want {
				t.Errorf("with image %s:\n got  %+v, %v\n want %+v", other, got, err, want)
			}
		})
	}
}

// TestTrustedImages: the trust policy admits the images its RedirectorTrust
// names, current and previous (which the hook Job writes before an upgrade
// or a rollback: webhook TestTrustRedirector*), and nothing else. Without the
// RedirectorTrust it fails closed: the API server looks a binding's
// parameters up before its match conditions, so every pod the policy is
// bound for is refused, with or without meshinit-redirect, until it is back
// (helm upgrade renders it).
func TestTrustedImages(t *testing.T) {
	c := apiServer(t)
	_, guarded := guardNamespaces(t, c, api.LevelBaseline)
	restore := c.keepTrust(t)
	t.Cleanup(restore)
	const previous, other = "ghcr.io/meshinit/redirector:0.0.9", "ghcr.io/meshinit/redirector:0.0.8"

	c.setTrust(t, redirectImage, previous)
	c.awaitVerdict(t, "team-a", withRedirectImage(previous), verdict{})
	c.awaitVerdict(t, "team-a", withRedirectImage(redirectImage), verdict{})
	c.awaitVerdict(t, "team-a", withRedirectImage(other), verdict{trustNamespaceBinding,
		`init container meshinit-redirect is not meshinit's: its image "` + other + `" is not "` + redirectImage + `" or "` + previous + `"`, metav1.StatusReasonForbidden})

	trust := &v1alpha1.RedirectorTrust{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: trustName}}
	if err := c.client.Delete(context.Background(), trust); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		what, namespace string
		pod             *corev1.Pod
	}{{"meshinit's own container", "team-a", pod("p", injected)}, {"a pod without meshinit-redirect", guarded, pod("p")}} {
		testkit.Eventually(t, 30*time.Second, p.what+" refused without the RedirectorTrust", func() error {
			err := c.createDryRun(p.namespace, p.pod.DeepCopy())
			if err == nil || !strings.Contains(err.Error(), "with binding '"+trustName) || !strings.Contains(err.Error(), "no params found") {
				return fmt.Errorf("%v", err)
			}
			return nil
		})
	}
}

// TestTrustSeenAfterRebinding: the API server sees every change of the
// RedirectorTrust after the trust policy's bindings were all gone and came
// back (as after an uninstall and an install, or an upgrade that turns the
// policies off and on). A ConfigMap param fails here: kube-apiserver stops a
// built-in paramKind's informer for good once no binding uses the kind
// (kubernetes/kubernetes#130887), and the policy reads the ConfigMap as it
// was then. The hook's previous image, written after the bindings are back,
// must be admitted, and an image taken out of the trust refused again.
func TestTrustSeenAfterRebinding(t *testing.T) {
	c := apiServer(t)
	restore := c.keepTrust(t)
	t.Cleanup(restore)
	const previous = "ghcr.io/meshinit/redirector:0.0.9"
	untrusted := verdict{trustNamespaceBinding, msgUntrusted(previous), metav1.StatusReasonForbidden}
	c.awaitVerdict(t, "team-a", withRedirectImage(previous), untrusted)

	var bindings []*unstructured.Unstructured
	for _, o := range chartPolicyObjects(t, testValues()) {
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" && strings.HasPrefix(o.GetName(), trustName) {
			bindings = append(bindings, o)
		}
	}
	if len(bindings) == 0 {
		t.Fatalf("the chart renders no binding of %s", trustName)
	}
	for _, b := range bindings {
		if err := c.client.Delete(context.Background(), b.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	// Unbound, the image is nobody's concern: admitted.
	c.awaitVerdict(t, "team-a", withRedirectImage(previous), verdict{})
	// The API server drops an unused paramKind's informer at its next
	// refresh of the policies, within a second.
	time.Sleep(3 * time.Second)
	for _, b := range bindings {
		c.apply(t, b)
	}
	c.awaitVerdict(t, "team-a", withRedirectImage(previous), untrusted)

	c.setTrust(t, redirectImage, previous)
	c.awaitVerdict(t, "team-a", withRedirectImage(previous), verdict{})
	c.setTrust(t, redirectImage, "")
	c.awaitVerdict(t, "team-a", withRedirectImage(previous), untrusted)
}

// withRedirectImage is an injected pod whose meshinit-redirect runs image.
func withRedirectImage(image string) *corev1.Pod {
	return pod("p", injected, forged(func(c *corev1.Container) { c.Image = image }))
}

// keepTrust returns a func that puts the rendered RedirectorTrust back as it
// is now (re-creating it if deleted) and waits for the policies to admit the
// chart's own container.
func (c *cluster) keepTrust(t *testing.T) func() {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: releaseNamespace, Name: trustName}
	var rendered v1alpha1.RedirectorTrust
	if err := c.client.Get(ctx, key, &rendered); err != nil {
		t.Fatal(err)
	}
	return func() {
		var trust v1alpha1.RedirectorTrust
		err := c.client.Get(ctx, key, &trust)
		if err == nil {
			trust.Spec = rendered.Spec
			err = c.client.Update(ctx, &trust)
		} else {
			trust = v1alpha1.RedirectorTrust{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: rendered.Labels}, Spec: rendered.Spec}
			err = c.client.Create(ctx, &trust)
		}
		if err != nil {
			t.Errorf("restoring RedirectorTrust %s: %v", key, err)
		}
		c.awaitVerdict(t, "team-a", pod("probe", injected), verdict{})
	}
}

// setTrust sets the RedirectorTrust's current and previous images, as Helm
// and the hook Job write them.
func (c *cluster) setTrust(t *testing.T, current, previous string) {
	t.Helper()
	ctx := context.Background()
	var trust v1alpha1.RedirectorTrust
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: trustName}, &trust); err != nil {
		t.Fatal(err)
	}
	trust.Spec = v1alpha1.RedirectorTrustSpec{Current: current, Previous: previous}
	if err := c.client.Update(ctx, &trust); err != nil {
		t.Fatal(err)
	}
}
