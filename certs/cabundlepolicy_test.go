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

package certs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestCABundlePolicy: with the chart's ValidatingAdmissionPolicy, whoever
// keeps the caBundle (the webhook's ServiceAccount; cert-manager's
// cainjector with certManager.enabled), impersonated here, may patch the
// caBundle of meshinit's MutatingWebhookConfiguration and nothing else of
// it, even with more rights than the chart grants; an administrator still
// may. The self-managed tests run with the policy too (newInstall).
func TestCABundlePolicy(t *testing.T) {
	only := "may change only webhooks[*].clientConfig.caBundle of mutatingwebhookconfiguration "
	changes := []struct {
		name   string
		change func(*admissionregistrationv1.MutatingWebhookConfiguration)
		want   string // in the refusal
	}{
		{"rules", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].Rules[0].Operations = append(c.Webhooks[0].Rules[0].Operations, admissionregistrationv1.Update)
		}, "this update changes webhooks[*].rules"},
		{"failurePolicy", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[1].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}, "this update changes webhooks[*].failurePolicy"},
		{"namespaceSelector", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"none": "such"}}
		}, "this update changes webhooks[*].namespaceSelector"},
		{"clientConfig.service", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service.Name = "elsewhere"
		}, "this update changes webhooks[*].clientConfig.service"},
		{"clientConfig.url instead of the service", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service, c.Webhooks[0].ClientConfig.URL = nil, ptr.To("https://attacker.example:8443/")
		}, "this update changes webhooks[*].clientConfig.url, webhooks[*].clientConfig.service"},
		{"timeoutSeconds and a label", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[1].TimeoutSeconds = ptr.To[int32](1)
			c.Labels["extra"] = "label"
		}, "this update changes metadata.labels, webhooks[*].timeoutSeconds"},
		{"a webhook removed", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = c.Webhooks[:1]
		}, "this update changes the number of webhooks"},
	}
	ctx := context.Background()

	for _, tc := range []struct {
		mode   string
		values map[string]any
		user   string // the caBundle's writer; "" for the webhook's ServiceAccount
	}{
		{"self-managed", map[string]any{}, ""},
		{"cert-manager", certManagerValues, "system:serviceaccount:cert-manager:cert-manager-cainjector"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			in := newInstall(t, "meshinit-vap-"+tc.mode, tc.values)
			user := tc.user
			if user == "" {
				user = "system:serviceaccount:" + in.name + ":" + in.name + "-webhook"
			} else {
				// cert-manager's own chart lets its cainjector patch every
				// MutatingWebhookConfiguration.
				grant(t, in, "cainjector", user, "get", "patch")
			}
			writer := impersonate(t, user)

			patch := func(change func(*admissionregistrationv1.MutatingWebhookConfiguration)) error {
				cfg := in.webhookConfig(t)
				orig := cfg.DeepCopy()
				change(cfg)
				return writer.Patch(ctx, cfg, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
			}
			// The API server loads a new policy asynchronously; until then
			// the probe's annotations change, which no case looks at.
			probes := 0
			testkit.Eventually(t, 30*time.Second, "the policy in effect", func() error {
				probes++
				err := patch(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
					metav1.SetMetaDataAnnotation(&c.ObjectMeta, "probe", strconv.Itoa(probes))
				})
				if err == nil || !strings.Contains(err.Error(), only) {
					return errors.New("the policy is not in effect yet")
				}
				return nil
			})

			for _, c := range changes {
				t.Run("refuses "+c.name, func(t *testing.T) {
					err := patch(c.change)
					if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), user+" "+only+in.name+"; "+c.want) {
						t.Errorf("got %v\nwant Forbidden: %s %s%s; %s", err, user, only, in.name, c.want)
					}
				})
			}
			t.Run("allows the caBundle", func(t *testing.T) {
				ca := mustCA(t, time.Now(), time.Hour)
				if err := patch(func(c *admissionregistrationv1.MutatingWebhookConfiguration) { setCABundle(c, ca.certPEM) }); err != nil {
					t.Fatal(err)
				}
				if b := caBundles(in.webhookConfig(t)); len(b) != 1 || b[0] != string(ca.certPEM) {
					t.Errorf("caBundles %d after the patch, want the new one on every webhook", len(b))
				}
			})
			t.Run("refuses update and delete even when RBAC allows them", func(t *testing.T) {
				grant(t, in, "more", user, "update", "delete")
				cfg := in.webhookConfig(t)
				changes[0].change(cfg)
				if err := writer.Update(ctx, cfg); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "webhooks[*].rules") {
					t.Errorf("update of the rules: %v, want Forbidden naming webhooks[*].rules", err)
				}
				if err := writer.Delete(ctx, in.webhookConfig(t)); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "it may not delete it") {
					t.Errorf("delete: %v, want Forbidden by the policy", err)
				}
			})
			t.Run("an administrator may change the rules", func(t *testing.T) {
				cfg := in.webhookConfig(t)
				orig := cfg.DeepCopy()
				changes[0].change(cfg)
				if err := in.admin.Patch(ctx, cfg, client.MergeFrom(orig)); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// impersonate is a client acting as user, a ServiceAccount.
func impersonate(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(apiServer.Get(t).Config)
	ns := strings.Split(user, ":")[2]
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// grant lets user do verbs on the install's MutatingWebhookConfiguration,
// and waits until the API server's authorizer says so.
func grant(t *testing.T, in *install, name, user string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(apiServer.Get(t).Config)
	name = in.name + "-test-" + name
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{admissionregistrationv1.GroupName}, Resources: []string{"mutatingwebhookconfigurations"},
		ResourceNames: []string{in.name}, Verbs: verbs,
	}}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, verb := range verbs {
		testkit.Eventually(t, 10*time.Second, "the grant in effect", func() error {
			review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: admissionregistrationv1.GroupName, Resource: "mutatingwebhookconfigurations", Name: in.name, Verb: verb,
				},
			}}, metav1.CreateOptions{})
			if err == nil && !review.Status.Allowed {
				err = fmt.Errorf("%s may not %s yet", user, verb)
			}
			return err
		})
	}
}
