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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// TestInstallPolicyInjector installs the chart with injector policy with
// Helm into a real API server (Helm reads the served APIs from it, as
// .Capabilities), then upgrades and uninstalls it: nothing of the webhook is
// installed, pods are injected by the API server alone (no webhook, nothing
// running: envtest has no kubelet), `helm upgrade` changes what new pods get
// (a cluster-wide setting, the image), and after uninstalling pods are
// created uninjected.
func TestInstallPolicyInjector(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	if !policyInjectorServed(t, server) {
		return
	}
	c, err := client.New(server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	helm, ch := newHelm(t, server)
	testkit.Namespace(t, server.Config, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{namespaceLabel: "enabled"}}})
	// injected creates a pod (dry run) in the opted-in namespace and returns
	// its meshinit-redirect container's image and arguments, and its status.
	injected := func() (image string, args []string, status string, err error) {
		p := pod("p")
		p.Namespace = "app"
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			return "", nil, "", err
		}
		for _, ic := range p.Spec.InitContainers {
			if ic.Name == initContainerName {
				return ic.Image, ic.Args, p.Annotations[webhook.StatusAnnotation], nil
			}
		}
		return "", nil, "", errors.New("not injected")
	}
	values := map[string]any{"injector": "policy", "policy": map[string]any{"defaultRedirectPolicy": map[string]any{"interception": "AllowOptOut"}}}

	var status string
	t.Run("install", func(t *testing.T) {
		if _, err := newInstall(helm).Run(ch, values); err != nil {
			t.Fatal(err)
		}
		var deployments appsv1.DeploymentList
		var mwcs admissionregistrationv1.MutatingWebhookConfigurationList
		var policies admissionregistrationv1.MutatingAdmissionPolicyList
		for _, l := range []client.ObjectList{&deployments, &mwcs, &policies} {
			if err := c.List(ctx, l, client.MatchingLabels{"app.kubernetes.io/instance": installRelease}); err != nil {
				t.Fatal(err)
			}
		}
		if len(deployments.Items) != 0 || len(mwcs.Items) != 0 || len(policies.Items) != 1 {
			t.Errorf("%d Deployments, %d MutatingWebhookConfigurations, %d MutatingAdmissionPolicies; want 0, 0, 1", len(deployments.Items), len(mwcs.Items), len(policies.Items))
		}
		testkit.Eventually(t, 30*time.Second, "a pod injected by the API server", func() error {
			var args []string
			var err error
			_, args, status, err = injected()
			if err != nil || !slices.Contains(args, "--exclude-outbound-ports=") {
				return fmt.Errorf("args %q: %v", args, err)
			}
			return nil
		})
	})
	t.Run("upgrade", func(t *testing.T) {
		up := action.NewUpgrade(helm)
		up.Namespace = releaseNamespace
		// No kubelet runs the chart's pre-upgrade hook Job on this API
		// server (Helm would wait for it): the e2e release tests run it.
		up.DisableHooks, up.Timeout = true, time.Minute
		upgraded := withInjector(map[string]any{"inject": map[string]any{
			"image":    map[string]any{"repository": "registry.example/redirector", "tag": "v2"},
			"redirect": map[string]any{"exclude-outbound-ports": "8080"},
		}, "policy": values["policy"]}, "policy")
		if _, err := up.Run(installRelease, ch, upgraded); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, "a new pod with the upgraded values", func() error {
			image, args, newStatus, err := injected()
			if err != nil || image != "registry.example/redirector:v2" || !slices.Contains(args, "--exclude-outbound-ports=8080") || newStatus == status {
				return fmt.Errorf("image %s args %q status %s (before %s): %v", image, args, newStatus, status, err)
			}
			return nil
		})
	})
	t.Run("uninstall", func(t *testing.T) {
		if _, err := action.NewUninstall(helm).Run(installRelease); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, "a pod created uninjected", func() error {
			if _, args, _, err := injected(); err == nil || !strings.Contains(err.Error(), "not injected") {
				return fmt.Errorf("args %q, %v", args, err)
			}
			return nil
		})
	})
}
