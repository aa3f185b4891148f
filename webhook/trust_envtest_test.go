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
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

const (
	trustName = "meshinit-redirector-trust"
	redirA    = "ghcr.io/meshinit/redirector:v1.0.0"
	redirB    = "ghcr.io/meshinit/redirector:v1.1.0"
	redirC    = "ghcr.io/meshinit/redirector:v1.2.0"
	redirD    = "registry.example.com:5000/mirror/redirector:v1.2.0"
)

// runTrust runs the trust-redirector subcommand, as Main does, with the
// API client c, for the RedirectorTrust name moving to image.
func runTrust(c client.Client, name, image string) (code int, stdout, stderr string) {
	return runTrustArgs(c, "--namespace="+releaseNamespace, "--name="+name, "--image="+image)
}

// runTrustArgs runs the trust-redirector subcommand with args (without
// the subcommand's name) and the API client c.
func runTrustArgs(c client.Client, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = webhook.TrustMain(context.Background(), args, &out, &errOut, func() (client.Client, error) { return c, nil })
	return code, out.String(), errOut.String()
}

// trustClient is webhook.TrustClient, the subcommand's client, for cfg.
func trustClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := webhook.TrustClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// installCRDs creates the chart's CRDs (crds/), as helm install does
// first, and waits until the RedirectorTrust API is served; it returns a
// client for any object (the admin's, unstructured).
func installCRDs(t *testing.T, server *testkit.APIServer) client.Client {
	t.Helper()
	ctx := context.Background()
	objects, err := client.New(server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, o := range charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, IncludeCRDs: true}, false) {
		if o.GetKind() == "CustomResourceDefinition" {
			if err := objects.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			crds = append(crds, o.GetName())
		}
	}
	if !slices.Contains(crds, "redirectortrusts.meshinit.io") {
		t.Fatalf("the chart's CRDs are %q, without redirectortrusts.meshinit.io", crds)
	}
	testkit.Eventually(t, 30*time.Second, "the RedirectorTrust API served", func() error {
		var list v1alpha1.RedirectorTrustList
		return trustClient(t, server.Config).List(ctx, &list, client.InNamespace(releaseNamespace))
	})
	return objects
}

// TestTrustRedirectorAgainstAPIServer runs the subcommand against a real
// API server: before the chart's CRDs are installed; then, with them, as
// the admin, through a release's life; against a concurrent writer; and as
// a user whose Role grants get and update on the one RedirectorTrust
// alone, as the chart's hook Job's ServiceAccount.
func TestTrustRedirectorAgainstAPIServer(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	admin := kubernetes.NewForConfigOrDie(server.Config)
	createNamespace(t, admin, releaseNamespace, nil)
	ctx := context.Background()

	t.Run("no CRD", func(t *testing.T) {
		code, stdout, stderr := runTrust(trustClient(t, server.Config), trustName, redirB)
		want := fmt.Sprintf("RedirectorTrust %s/%s: the API server does not serve the kind (no CRD redirectortrusts.meshinit.io): the installed release keeps no redirector trust, nothing carried over to %q\n", releaseNamespace, trustName, redirB)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, want)
		}
	})

	installCRDs(t, server)
	c := trustClient(t, server.Config)

	create := func(t *testing.T, name, current string) {
		t.Helper()
		trust := &v1alpha1.RedirectorTrust{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: releaseNamespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
			Spec:       v1alpha1.RedirectorTrustSpec{Current: current},
		}
		if err := c.Create(ctx, trust); err != nil {
			t.Fatal(err)
		}
	}
	get := func(t *testing.T, name string) *v1alpha1.RedirectorTrust {
		t.Helper()
		var trust v1alpha1.RedirectorTrust
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: name}, &trust); err != nil {
			t.Fatal(err)
		}
		return &trust
	}
	names := func(t *testing.T) []string {
		t.Helper()
		var list v1alpha1.RedirectorTrustList
		if err := c.List(ctx, &list, client.InNamespace(releaseNamespace)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, trust := range list.Items {
			out = append(out, trust.Name)
		}
		return out
	}

	t.Run("absent", func(t *testing.T) {
		before := names(t)
		code, stdout, stderr := runTrust(c, trustName, redirB)
		want := fmt.Sprintf("RedirectorTrust %s/%s: not found: the installed release keeps no redirector trust, nothing carried over to %q\n", releaseNamespace, trustName, redirB)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, want)
		}
		var trust v1alpha1.RedirectorTrust
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: trustName}, &trust); !apierrors.IsNotFound(err) {
			t.Errorf("the RedirectorTrust after the run: %v, want not found", err)
		}
		if after := names(t); !slices.Equal(after, before) {
			t.Errorf("RedirectorTrusts %q after the run, %q before", after, before)
		}
	})

	t.Run("release", func(t *testing.T) {
		const name = trustName + "-release"
		create(t, name, redirA)
		what := fmt.Sprintf("RedirectorTrust %s/%s", releaseNamespace, name)
		for _, step := range []struct {
			what, image       string
			current, previous string
			line              string
		}{
			{"a hook at the installed version", redirA, redirA, "", fmt.Sprintf("%s unchanged: current %q", what, redirA)},
			{"upgrade", redirB, redirB, redirA, fmt.Sprintf("%s: current %q, previous %q (was current %q)", what, redirB, redirA, redirA)},
			{"the upgrade's hook again", redirB, redirB, redirA, fmt.Sprintf("%s unchanged: current %q", what, redirB)},
			{"rollback", redirA, redirA, redirB, fmt.Sprintf("%s: current %q, previous %q (was current %q)", what, redirA, redirB, redirB)},
			{"upgrade", redirC, redirC, redirA, fmt.Sprintf("%s: current %q, previous %q (was current %q)", what, redirC, redirA, redirA)},
		} {
			before := get(t, name)
			code, stdout, stderr := runTrust(c, name, step.image)
			if code != 0 || stdout != step.line+"\n" || stderr != "" {
				t.Fatalf("%s to %s: exit %d, stdout %q, stderr %q; want 0, %q", step.what, step.image, code, stdout, stderr, step.line)
			}
			after := get(t, name)
			want := v1alpha1.RedirectorTrustSpec{Current: step.current, Previous: step.previous}
			if after.Spec != want || !maps.Equal(after.Labels, before.Labels) {
				t.Fatalf("%s to %s: spec %+v, labels %q; want %+v, labels %q", step.what, step.image, after.Spec, after.Labels, want, before.Labels)
			}
			if unchanged := strings.Contains(step.line, "unchanged"); unchanged != (after.ResourceVersion == before.ResourceVersion) {
				t.Errorf("%s to %s: resourceVersion %s, was %s: an unchanged trust is not written, a changed one is", step.what, step.image, after.ResourceVersion, before.ResourceVersion)
			}
		}
	})

	t.Run("conflict", func(t *testing.T) {
		const name = trustName + "-conflict"
		create(t, name, redirA)
		// Another writer (another release operation's hook) moves the
		// RedirectorTrust to C between the command's first read and its
		// update: the update conflicts, and the command reads again and
		// moves what it read then (C becomes previous), keeping the other
		// writer's annotation.
		racing := &racingClient{Client: c, race: func() {
			trust := get(t, name)
			trust.Spec.Current = redirC
			trust.Annotations = map[string]string{"concurrent": "written between get and update"}
			if err := c.Update(ctx, trust); err != nil {
				t.Error(err)
			}
		}}
		code, stdout, stderr := runTrust(racing, name, redirB)
		want := fmt.Sprintf("RedirectorTrust %s/%s: current %q, previous %q (was current %q)\n", releaseNamespace, name, redirB, redirC, redirC)
		if code != 0 || stdout != want || stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, want)
		}
		if racing.gets != 2 || racing.conflicts != 1 || racing.updates != 2 {
			t.Errorf("%d gets, %d updates of which %d conflicted; want 2 gets, 2 updates, 1 conflict", racing.gets, racing.updates, racing.conflicts)
		}
		got := get(t, name)
		if want := (v1alpha1.RedirectorTrustSpec{Current: redirB, Previous: redirC}); got.Spec != want || got.Annotations["concurrent"] == "" {
			t.Errorf("spec %+v, annotations %q; want %+v and the other writer's annotation", got.Spec, got.Annotations, want)
		}
	})

	t.Run("rbac", func(t *testing.T) {
		const name = trustName + "-rbac"
		const user = "system:serviceaccount:" + releaseNamespace + ":meshinit-trust"
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "meshinit-trust", Namespace: releaseNamespace},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"redirectortrusts"},
				ResourceNames: []string{name}, Verbs: []string{"get", "update"},
			}},
		}
		if _, err := admin.RbacV1().Roles(releaseNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "meshinit-trust", Namespace: releaseNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if _, err := admin.RbacV1().RoleBindings(releaseNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		hook := trustClient(t, server.User(t, user, "system:serviceaccounts", "system:serviceaccounts:"+releaseNamespace))

		// The granted name, before it exists: not found, not forbidden.
		testkit.Eventually(t, 30*time.Second, "the Role to authorize the hook's user", func() error {
			code, stdout, stderr := runTrust(hook, name, redirB)
			if code != 0 || !strings.Contains(stdout, ": not found: ") {
				return fmt.Errorf("exit %d, stdout %q, stderr %q; want 0, not found", code, stdout, stderr)
			}
			return nil
		})
		create(t, name, redirA)
		code, stdout, stderr := runTrust(hook, name, redirD)
		if code != 0 || !strings.Contains(stdout, fmt.Sprintf("current %q, previous %q", redirD, redirA)) || stderr != "" {
			t.Errorf("as %s: exit %d, stdout %q, stderr %q; want 0", user, code, stdout, stderr)
		}
		if got, want := get(t, name).Spec, (v1alpha1.RedirectorTrustSpec{Current: redirD, Previous: redirA}); got != want {
			t.Errorf("spec %+v, want %+v", got, want)
		}

		// A name the Role does not grant, existing or not: forbidden, exit 1,
		// and the RedirectorTrust untouched.
		const other = trustName + "-other"
		create(t, other, redirA)
		for _, n := range []string{other, trustName + "-absent"} {
			code, stdout, stderr := runTrust(hook, n, redirB)
			want := fmt.Sprintf(`trust-redirector: RedirectorTrust %s/%s to %q: redirectortrusts.meshinit.io %q is forbidden: User %q cannot get resource "redirectortrusts" in API group "meshinit.io"`, releaseNamespace, n, redirB, n, user)
			if code != 1 || stdout != "" || !strings.HasPrefix(stderr, want) {
				t.Errorf("%s as %s: exit %d, stdout %q, stderr %q; want 1, %q", n, user, code, stdout, stderr, want)
			}
		}
		if got, want := get(t, other).Spec, (v1alpha1.RedirectorTrustSpec{Current: redirA}); got != want {
			t.Errorf("%s: spec %+v, want %+v", other, got, want)
		}
	})
}

// TestTrustRedirectorChartHook runs the subcommand as the chart's hook Job
// does on an upgrade that changes the redirector image: the RedirectorTrust
// as the installed release rendered it, then the upgrade's hook
// ServiceAccount, Role and RoleBinding, and the Job's arguments, run with
// that ServiceAccount's credentials.
func TestTrustRedirectorChartHook(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	admin := kubernetes.NewForConfigOrDie(server.Config)
	createNamespace(t, admin, releaseNamespace, nil)
	ctx := context.Background()
	objects := installCRDs(t, server)
	installed := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace}, false)
	upgrade := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: map[string]any{
		"inject": map[string]any{"image": map[string]any{"tag": "v9.9.9-upgrade"}},
	}}, false)
	one := func(t *testing.T, objs []*unstructured.Unstructured, kind string, hook bool) *unstructured.Unstructured {
		t.Helper()
		var found []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == kind && (o.GetAnnotations()["helm.sh/hook"] != "") == hook {
				found = append(found, o)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d %ss (hook %v) in the chart, want 1", len(found), kind, hook)
		}
		return found[0]
	}
	trust := one(t, installed, "RedirectorTrust", false)
	if err := objects.Create(ctx, trust); err != nil {
		t.Fatal(err)
	}
	from, _, _ := unstructured.NestedString(trust.Object, "spec", "current")
	to, _, _ := unstructured.NestedString(one(t, upgrade, "RedirectorTrust", false).Object, "spec", "current")
	if from == "" || to == "" || from == to {
		t.Fatalf("the installed release trusts %q, the upgrade %q: want two images", from, to)
	}
	for _, kind := range []string{"ServiceAccount", "Role", "RoleBinding"} {
		if err := objects.Create(ctx, one(t, upgrade, kind, true)); err != nil {
			t.Fatal(err)
		}
	}
	job := one(t, upgrade, "Job", true)
	containers, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("the hook Job has %d containers, want 1", len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if len(args) == 0 || args[0] != webhook.TrustCommand {
		t.Fatalf("the hook Job runs %q, want %s and its flags", args, webhook.TrustCommand)
	}
	if !slices.Contains(args, "--image="+to) || !slices.Contains(args, "--name="+trust.GetName()) {
		t.Errorf("the hook Job runs %q, want --name=%s --image=%s", args, trust.GetName(), to)
	}
	sa := one(t, upgrade, "ServiceAccount", true).GetName()
	user := "system:serviceaccount:" + releaseNamespace + ":" + sa
	hook := trustClient(t, server.User(t, user, "system:serviceaccounts", "system:serviceaccounts:"+releaseNamespace))
	want := fmt.Sprintf("RedirectorTrust %s/%s: current %q, previous %q (was current %q)\n", releaseNamespace, trust.GetName(), to, from, from)
	testkit.Eventually(t, 30*time.Second, "the hook's Role to authorize its ServiceAccount", func() error {
		code, stdout, stderr := runTrustArgs(hook, args[1:]...)
		if code != 0 || stdout != want || stderr != "" {
			return fmt.Errorf("exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, want)
		}
		return nil
	})
	var got v1alpha1.RedirectorTrust
	if err := trustClient(t, server.Config).Get(ctx, client.ObjectKeyFromObject(trust), &got); err != nil {
		t.Fatal(err)
	}
	if want := (v1alpha1.RedirectorTrustSpec{Current: to, Previous: from}); got.Spec != want {
		t.Errorf("spec %+v, want %+v", got.Spec, want)
	}
	// The ServiceAccount may do nothing else: not even list them.
	var list v1alpha1.RedirectorTrustList
	if err := hook.List(ctx, &list, client.InNamespace(releaseNamespace)); !apierrors.IsForbidden(err) {
		t.Errorf("the hook's ServiceAccount lists RedirectorTrusts: %v, want forbidden", err)
	}
}

// racingClient is an API client whose first get runs race after reading,
// and which counts gets, updates and conflicting updates.
type racingClient struct {
	client.Client
	race                     func()
	gets, updates, conflicts int
}

func (c *racingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	c.gets++
	if c.gets == 1 {
		c.race()
	}
	return err
}

func (c *racingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	c.updates++
	if apierrors.IsConflict(err) {
		c.conflicts++
	}
	return err
}
