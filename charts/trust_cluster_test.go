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
	"k8s.io/pod-security-admission/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// TestTrustedImages: the trust policy admits the images its ConfigMap names,
// current and previous (which the hook Job writes before an upgrade or a
// rollback: webhook TestTrustRedirector*), and nothing else. Without the
// ConfigMap it fails closed: the API server looks a binding's parameters
// up before its match conditions, so every pod the policy is bound for is
// refused, with or without meshinit-redirect, until the ConfigMap is back
// (helm upgrade renders it).
func TestTrustedImages(t *testing.T) {
	c := apiServer(t)
	_, guarded := guardNamespaces(t, c, api.LevelBaseline)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: releaseNamespace, Name: trustName}
	var rendered corev1.ConfigMap
	if err := c.client.Get(ctx, key, &rendered); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		var cm corev1.ConfigMap
		err := c.client.Get(ctx, key, &cm)
		if err == nil {
			cm.Data = rendered.Data
			err = c.client.Update(ctx, &cm)
		} else {
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: rendered.Labels}, Data: rendered.Data}
			err = c.client.Create(ctx, &cm)
		}
		if err != nil {
			t.Errorf("restoring ConfigMap %s: %v", key, err)
		}
		c.awaitVerdict(t, "team-a", pod("probe", injected), verdict{})
	}
	t.Cleanup(restore)
	withImage := func(image string) *corev1.Pod {
		return pod("p", injected, forged(func(c *corev1.Container) { c.Image = image }))
	}
	const previous, other = "ghcr.io/meshinit/redirector:0.0.9", "ghcr.io/meshinit/redirector:0.0.8"

	cm := rendered.DeepCopy()
	cm.Data["previous"] = previous
	if err := c.client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	c.awaitVerdict(t, "team-a", withImage(previous), verdict{})
	c.awaitVerdict(t, "team-a", withImage(redirectImage), verdict{})
	c.awaitVerdict(t, "team-a", withImage(other), verdict{trustNamespaceBinding,
		`init container meshinit-redirect is not meshinit's: its image "` + other + `" is not "` + redirectImage + `" or "` + previous + `"`, metav1.StatusReasonForbidden})

	if err := c.client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		what, namespace string
		pod             *corev1.Pod
	}{{"meshinit's own container", "team-a", pod("p", injected)}, {"a pod without meshinit-redirect", guarded, pod("p")}} {
		testkit.Eventually(t, 30*time.Second, p.what+" refused without the ConfigMap", func() error {
			err := c.createDryRun(p.namespace, p.pod.DeepCopy())
			if err == nil || !strings.Contains(err.Error(), "with binding '"+trustName) || !strings.Contains(err.Error(), "no params found") {
				return fmt.Errorf("%v", err)
			}
			return nil
		})
	}
}
