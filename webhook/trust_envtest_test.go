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

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

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
// API client cs, for the ConfigMap name moving to image.
func runTrust(cs kubernetes.Interface, name, image string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	args := []string{"--namespace=" + releaseNamespace, "--configmap=" + name, "--image=" + image}
	code = webhook.TrustMain(context.Background(), args, &out, &errOut, func() (kubernetes.Interface, error) { return cs, nil })
	return code, out.String(), errOut.String()
}

// TestTrustRedirectorAgainstAPIServer runs the subcommand against a real
// API server: as the admin, through a release's life; against a concurrent
// writer; and as a user whose Role grants get and update on the trust
// ConfigMap alone, as the chart's hook Job's ServiceAccount.
func TestTrustRedirectorAgainstAPIServer(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	admin := kubernetes.NewForConfigOrDie(server.Config)
	createNamespace(t, admin, releaseNamespace, nil)
	ctx := context.Background()
	cms := admin.CoreV1().ConfigMaps(releaseNamespace)
	create := func(t *testing.T, name string, data map[string]string) {
		t.Helper()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
			Data:       data,
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(t *testing.T, name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	configMaps := func(t *testing.T) []string {
		t.Helper()
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		return names
	}

	t.Run("absent", func(t *testing.T) {
		before := configMaps(t)
		code, stdout, stderr := runTrust(admin, trustName, redirB)
		want := fmt.Sprintf("redirector trust %s/%s: no such ConfigMap: the installed release keeps no redirector trust, nothing carried over to %q\n", releaseNamespace, trustName, redirB)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q", code, stdout, stderr, want)
		}
		if _, err := cms.Get(ctx, trustName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap after the run: %v, want not found", err)
		}
		if after := configMaps(t); !slices.Equal(after, before) {
			t.Errorf("ConfigMaps %q after the run, %q before", after, before)
		}
	})

	t.Run("release", func(t *testing.T) {
		const name = trustName + "-release"
		create(t, name, map[string]string{"current": redirA, "other": "kept"})
		what := fmt.Sprintf("redirector trust %s/%s", releaseNamespace, name)
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
			code, stdout, stderr := runTrust(admin, name, step.image)
			if code != 0 || stdout != step.line+"\n" || stderr != "" {
				t.Fatalf("%s to %s: exit %d, stdout %q, stderr %q; want 0, %q", step.what, step.image, code, stdout, stderr, step.line)
			}
			after := get(t, name)
			want := map[string]string{"current": step.current, "other": "kept"}
			if step.previous != "" {
				want["previous"] = step.previous
			}
			if !maps.Equal(after.Data, want) || !maps.Equal(after.Labels, before.Labels) {
				t.Fatalf("%s to %s: data %q, labels %q; want %q, labels %q", step.what, step.image, after.Data, after.Labels, want, before.Labels)
			}
			if unchanged := strings.Contains(step.line, "unchanged"); unchanged != (after.ResourceVersion == before.ResourceVersion) {
				t.Errorf("%s to %s: resourceVersion %s, was %s: an unchanged trust is not written, a changed one is", step.what, step.image, after.ResourceVersion, before.ResourceVersion)
			}
		}
	})

	t.Run("conflict", func(t *testing.T) {
		const name = trustName + "-conflict"
		create(t, name, map[string]string{"current": redirA})
		// Another writer changes the ConfigMap between the command's first
		// read and its update: the update conflicts, and the command reads
		// again and writes over the other writer's version, keeping its
		// change.
		racing := &racingClient{Interface: admin, race: func() {
			cm := get(t, name)
			cm.Data["concurrent"] = "written between get and update"
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		}}
		code, stdout, stderr := runTrust(racing, name, redirB)
		if code != 0 || !strings.Contains(stdout, fmt.Sprintf("current %q, previous %q", redirB, redirA)) || stderr != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if racing.gets != 2 || racing.conflicts != 1 || racing.updates != 2 {
			t.Errorf("%d gets, %d updates of which %d conflicted; want 2 gets, 2 updates, 1 conflict", racing.gets, racing.updates, racing.conflicts)
		}
		want := map[string]string{"current": redirB, "previous": redirA, "concurrent": "written between get and update"}
		if got := get(t, name).Data; !maps.Equal(got, want) {
			t.Errorf("data %q, want %q", got, want)
		}
	})

	t.Run("rbac", func(t *testing.T) {
		const name = trustName + "-rbac"
		const user = "system:serviceaccount:" + releaseNamespace + ":meshinit-trust"
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "meshinit-trust", Namespace: releaseNamespace},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"},
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
		hook := kubernetes.NewForConfigOrDie(server.User(t, user, "system:serviceaccounts", "system:serviceaccounts:"+releaseNamespace))

		// The granted name, before it exists: not found, not forbidden.
		testkit.Eventually(t, 30*time.Second, "the Role to authorize the hook's user", func() error {
			code, stdout, stderr := runTrust(hook, name, redirB)
			if code != 0 || !strings.Contains(stdout, "no such ConfigMap") {
				return fmt.Errorf("exit %d, stdout %q, stderr %q; want 0, no such ConfigMap", code, stdout, stderr)
			}
			return nil
		})
		create(t, name, map[string]string{"current": redirA})
		code, stdout, stderr := runTrust(hook, name, redirD)
		if code != 0 || !strings.Contains(stdout, fmt.Sprintf("current %q, previous %q", redirD, redirA)) || stderr != "" {
			t.Errorf("as %s: exit %d, stdout %q, stderr %q; want 0", user, code, stdout, stderr)
		}
		if got, want := get(t, name).Data, map[string]string{"current": redirD, "previous": redirA}; !maps.Equal(got, want) {
			t.Errorf("data %q, want %q", got, want)
		}

		// A name the Role does not grant, existing or not: forbidden, exit 1,
		// and the ConfigMap untouched.
		const other = trustName + "-other"
		create(t, other, map[string]string{"current": redirA})
		for _, n := range []string{other, trustName + "-absent"} {
			code, stdout, stderr := runTrust(hook, n, redirB)
			want := fmt.Sprintf(`trust-redirector: redirector trust %s/%s to %q: configmaps %q is forbidden: User %q cannot get resource "configmaps"`, releaseNamespace, n, redirB, n, user)
			if code != 1 || stdout != "" || !strings.HasPrefix(stderr, want) {
				t.Errorf("%s as %s: exit %d, stdout %q, stderr %q; want 1, %q", n, user, code, stdout, stderr, want)
			}
		}
		if got, want := get(t, other).Data, map[string]string{"current": redirA}; !maps.Equal(got, want) {
			t.Errorf("%s: data %q, want %q", other, got, want)
		}
	})
}

// racingClient is an API client whose first ConfigMap get runs race after
// reading, and which counts gets, updates and conflicting updates.
type racingClient struct {
	kubernetes.Interface
	race                     func()
	gets, updates, conflicts int
}

func (c *racingClient) CoreV1() corev1client.CoreV1Interface {
	return racingCoreV1{c.Interface.CoreV1(), c}
}

type racingCoreV1 struct {
	corev1client.CoreV1Interface
	c *racingClient
}

func (r racingCoreV1) ConfigMaps(namespace string) corev1client.ConfigMapInterface {
	return racingConfigMaps{r.CoreV1Interface.ConfigMaps(namespace), r.c}
}

type racingConfigMaps struct {
	corev1client.ConfigMapInterface
	c *racingClient
}

func (r racingConfigMaps) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	cm, err := r.ConfigMapInterface.Get(ctx, name, opts)
	r.c.gets++
	if r.c.gets == 1 {
		r.c.race()
	}
	return cm, err
}

func (r racingConfigMaps) Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	out, err := r.ConfigMapInterface.Update(ctx, cm, opts)
	r.c.updates++
	if apierrors.IsConflict(err) {
		r.c.conflicts++
	}
	return out, err
}
