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
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestPolicyInjectorReinvoked: a mutating webhook puts an init container of
// its own first. The API server runs mutating admission policies before
// mutating webhooks, so the webhook always changes the pod after
// meshinit's policy; with webhook.reinvocationPolicy IfNeeded (the default)
// the API server then evaluates meshinit's policy again, which moves
// meshinit-redirect back to first (placement first), as the webhook does
// when reinvoked; with Never it stays behind the other one. Real API
// server, dry-run creates.
func TestPolicyInjectorReinvoked(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	if !policyInjectorServed(t, server) {
		return
	}
	c, err := client.New(server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{releaseNamespace, "app"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if name == "app" {
			ns.Labels = map[string]string{namespaceLabel: "enabled"}
		}
		testkit.Namespace(t, server.Config, ns)
	}
	if err := c.Create(ctx, prependWebhook(t)); err != nil {
		t.Fatal(err)
	}
	// initNames creates a pod with init container migrate (dry run) and
	// returns its init containers' names.
	initNames := func() ([]string, error) {
		p := pod("p", withInit(corev1.Container{Name: "migrate", Image: "migrate:1"}))
		p.Namespace = "app"
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			return nil, err
		}
		var names []string
		for _, ic := range p.Spec.InitContainers {
			names = append(names, ic.Name)
		}
		return names, nil
	}
	for _, tc := range []struct {
		reinvocation string
		want         []string
	}{
		{"Never", []string{"other", initContainerName, "migrate"}},
		{"IfNeeded", []string{initContainerName, "other", "migrate"}},
	} {
		t.Run(tc.reinvocation, func(t *testing.T) {
			for _, o := range renderMode(t, map[string]any{"webhook": map[string]any{"reinvocationPolicy": tc.reinvocation}}, "policy") {
				if !strings.HasPrefix(o.GetName(), injectName) {
					continue
				}
				if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
					t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			// The API server's policy informers see a change after a moment.
			testkit.Eventually(t, 30*time.Second, fmt.Sprintf("init containers %v", tc.want), func() error {
				names, err := initNames()
				if err == nil && !slices.Equal(names, tc.want) {
					err = fmt.Errorf("init containers %v", names)
				}
				return err
			})
		})
	}
}

// prependWebhook serves a mutating webhook (reinvocationPolicy Never) that
// adds init container "other" first to every pod without one.
func prependWebhook(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	return testkit.PatchingWebhook(t, "prepend", &metav1.LabelSelector{MatchLabels: map[string]string{namespaceLabel: "enabled"}}, func(object []byte) []byte {
		var p corev1.Pod
		if json.Unmarshal(object, &p) != nil || slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "other" }) {
			return nil
		}
		return []byte(`[{"op":"add","path":"/spec/initContainers/0","value":{"name":"other","image":"other:1"}}]`)
	})
}
