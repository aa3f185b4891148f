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

package kubectlplugin

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// endpointAddr is the address the test's EndpointSlice gives the webhook's
// one replica; the test's dialer sends it to the webhook running in the
// test (an EndpointSlice may not hold a loopback address).
const endpointAddr = "10.96.0.10:9443"

// apiServerEnv is a kube-apiserver with the chart installed, the webhook
// running in the test, and what a cluster's controllers would have done
// for them (the Deployment's status, the Service's EndpointSlice, the
// policies' type checking).
type apiServerEnv struct {
	server  *testkit.APIServer
	admin   kubernetes.Interface
	objects client.Client
	// webhookAddr is where the webhook listens; stopWebhook stops it.
	webhookAddr string
	stopWebhook func()
	config      *webhook.Config // the chart's, as installed
	// apiServerInjects: the chart's MutatingAdmissionPolicy injects pods
	// (injector policy), not the test for the webhook (createPod).
	apiServerInjects bool
}

// newAPIServerEnv starts a kube-apiserver for t, with nothing installed.
func newAPIServerEnv(t *testing.T) *apiServerEnv {
	t.Helper()
	server := testkit.StartAPIServer(t, testkit.Options{})
	e := &apiServerEnv{server: server}
	quiet := rest.CopyConfig(server.Config)
	quiet.WarningHandler = rest.NoWarnings{}
	e.admin = kubernetes.NewForConfigOrDie(quiet)
	var err error
	if e.objects, err = client.New(quiet, client.Options{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// plugin runs kubectl meshinit against the API server with kubeconfig
// (the admin's if ""), and returns its output and exit code.
func (e *apiServerEnv) plugin(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = e.server.Kubeconfig
	}
	dial := func(ctx context.Context, addr, serverName string) ([]*x509.Certificate, error) {
		if addr == endpointAddr {
			addr = e.webhookAddr
		}
		return dialTLS(ctx, addr, serverName)
	}
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"--kubeconfig", kubeconfig}, args...), &out, &errOut, &options{now: time.Now, dial: dial})
	t.Logf("kubectl meshinit %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String(), errOut.String(), code
}

// mustPlugin runs the plugin and fails unless it exits with code and its
// output holds each of want.
func (e *apiServerEnv) mustPlugin(t *testing.T, code int, want []string, args ...string) string {
	t.Helper()
	out, errOut, got := e.plugin(t, "", args...)
	if got != code {
		t.Errorf("kubectl meshinit %s: exit %d, want %d", strings.Join(args, " "), got, code)
	}
	for _, w := range want {
		if !strings.Contains(out+errOut, w) {
			t.Errorf("kubectl meshinit %s: output lacks %q", strings.Join(args, " "), w)
		}
	}
	return out
}

// TestAgainstAPIServer runs every command against a real kube-apiserver:
// meshinit not installed, then installed and healthy, then each problem
// the commands are for, each found by the right command with exit 1.
func TestAgainstAPIServer(t *testing.T) {
	e := newAPIServerEnv(t)
	server := e.server
	ctx := context.Background()

	t.Run("not installed: every command says so and exits 1", func(t *testing.T) {
		for _, args := range [][]string{{"check"}, {"pods", "-A"}, {"audit", "-n", "default"}, {"explain", "x"}} {
			e.mustPlugin(t, 1, []string{"meshinit is not installed in this cluster", "helm install meshinit"}, args...)
		}
	})

	e.install(t)
	for _, ns := range []string{"app", "late"} {
		e.createNamespace(t, ns, nil)
	}
	e.label(t, "app", webhook.NamespaceLabel, "enabled")
	web := e.deployment(t, "app", "web", nil, 2)
	e.bareInjectedPod(t, "app", "solo", nil)
	e.plainPod(t, "app", "opted-out", map[string]string{webhook.PodLabel: "false"})

	t.Run("healthy: every command exits 0", func(t *testing.T) {
		e.mustPlugin(t, 0, []string{
			"served as meshinit.io/v1alpha1; 1 RedirectPolicy",
			"type-checked without warnings",
			"available, 2 of 2 replicas ready",
			"served by endpoint " + endpointAddr + ": trusted for meshinit-webhook.meshinit-system.svc by the caBundle of every webhook (2)",
			"no problems",
		}, "check")
		e.mustPlugin(t, 0, []string{"deployment/web", web[0].Name, "current", "not-injected (pod-opted-out)", "4 pods"}, "pods", "-n", "app")
		e.mustPlugin(t, 0, []string{"RedirectPolicies: meshinit-system/default", "every one admitted"}, "audit", "-n", "app")
		e.mustPlugin(t, 0, []string{"State:     current", `-A MESHINIT_INBOUND -p tcp -m comment --comment "meshinit: inbound to the proxy" -j REDIRECT --to-ports 15006`}, "explain", web[0].Name, "-n", "app")
	})

	t.Run("the RedirectorTrust deleted, restored, another current; its CRD deleted: check exits 1 with MI1016", func(t *testing.T) {
		const trust = "meshinit-redirector-trust"
		trusted := "trusts redirector image " + e.config.Image + " (spec.current)"
		e.mustFinding(t, 0, CodeRedirectorTrust, StatusOK, trusted)
		e.mustPlugin(t, 0, []string{"binds meshinit-redirector-trust with RedirectorTrust meshinit-system/meshinit-redirector-trust where its matchResources select, validationActions [Deny]"}, "check")
		key := client.ObjectKey{Namespace: testNamespace, Name: trust}
		saved := newTrust()
		if err := e.objects.Get(ctx, key, saved); err != nil {
			t.Fatal(err)
		}
		// dryRun creates a pod in the opted-in namespace, injected or
		// opted out (which the default RedirectPolicy allows), without
		// keeping it: what the API server answers now.
		dryRun := func(inject bool) error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trust-probe", Namespace: "app"}, Spec: podSpec()}
			if inject {
				pod = injectedBy(t, pod, map[string]string{webhook.NamespaceLabel: "enabled"}, e.config)
			} else {
				pod.Labels = map[string]string{webhook.PodLabel: "false"}
			}
			_, err := e.admin.CoreV1().Pods("app").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		admitted := func(what string, inject bool) {
			t.Helper()
			testkit.Eventually(t, 30*time.Second, what+" to be admitted", func() error { return dryRun(inject) })
		}
		refused := func(what string, inject bool, message string) {
			t.Helper()
			testkit.Eventually(t, 30*time.Second, what+" to be refused", func() error {
				if err := dryRun(inject); err == nil || !strings.Contains(err.Error(), message) {
					return fmt.Errorf("created: %v, want refused with %q", err, message)
				}
				return nil
			})
		}

		// put writes spec into the RedirectorTrust, creating it again as
		// installed when it is missing.
		put := func(current, previous string) {
			t.Helper()
			spec := map[string]any{"current": current}
			if previous != "" {
				spec["previous"] = previous
			}
			testkit.Eventually(t, 30*time.Second, "writing RedirectorTrust "+trust, func() error {
				u := newTrust()
				err := e.objects.Get(ctx, key, u)
				switch {
				case apierrors.IsNotFound(err):
					u.SetNamespace(testNamespace)
					u.SetName(trust)
					u.SetLabels(saved.GetLabels())
					u.Object["spec"] = spec
					return e.objects.Create(ctx, u)
				case err != nil:
					return err // also while the API server does not serve the kind again yet
				}
				u.Object["spec"] = spec
				return e.objects.Update(ctx, u)
			})
		}
		current, _, _ := unstructured.NestedString(saved.Object, "spec", "current")
		if current != e.config.Image {
			t.Fatalf("RedirectorTrust %s: spec.current %q, want the injector's %q", trust, current, e.config.Image)
		}
		// The CRD as the chart holds it, to apply it again.
		crds := charts.Find(chartObjects(t, nil), "CustomResourceDefinition", trustCRDName)
		if len(crds) != 1 {
			t.Fatalf("the chart holds %d CustomResourceDefinitions %s, want 1", len(crds), trustCRDName)
		}
		applyCRD := func() {
			t.Helper()
			e.apply(t, crds)
		}
		// Whatever fails, the CRD and the RedirectorTrust as installed are
		// back for the tests after this one, and the API server has seen
		// them.
		defer func() {
			applyCRD()
			put(current, "")
			admitted("an opted-out pod", false)
			admitted("an injected pod", true)
		}()

		if err := e.objects.Delete(ctx, saved); err != nil {
			t.Fatal(err)
		}
		// What the finding says: a pod without meshinit's init container
		// is refused too.
		refused("an opted-out pod", false, "ValidatingAdmissionPolicy '"+trust+"' with binding '"+trust+"-namespace' denied request")
		e.mustFinding(t, 1, CodeRedirectorTrust, StatusProblem, "missing: 3 bindings meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace, meshinit-redirector-trust-pod-security of ValidatingAdmissionPolicy meshinit-redirector-trust, "+
			"so the API server refuses every create and update of a pod or workload they select, with or without meshinit's init container, until it is back")
		e.mustPlugin(t, 1, []string{"RedirectorTrust meshinit-system/meshinit-redirector-trust (MI1016)",
			"helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values   # renders it again"}, "check")
		put(current, "")
		admitted("an opted-out pod", false)
		admitted("an injected pod", true)
		e.mustFinding(t, 0, CodeRedirectorTrust, StatusOK, trusted)

		// Another release's image as current, none previous: the pods
		// the injector gives meshinit-redirect now are refused.
		const other = "registry.example/meshinit/redirector:9.9.9"
		put(other, "")
		refused("an injected pod", true, "init container meshinit-redirect is not meshinit's")
		e.mustFinding(t, 1, CodeRedirectorTrust, StatusProblem, "trusts redirector image "+other+" (spec.current), not "+e.config.Image+", the one the injector gives meshinit-redirect (ConfigMap meshinit-system/meshinit-webhook)")
		// The injector's image as previous (an upgrade under way): ok.
		put(other, e.config.Image)
		admitted("an injected pod", true)
		e.mustFinding(t, 0, CodeRedirectorTrust, StatusOK, "trusts redirector images "+other+" (spec.current) and "+e.config.Image+" (spec.previous)")

		// The CRD deleted (which deletes the RedirectorTrust with it). The
		// API server, which resolved the policy's paramKind before, finds
		// no RedirectorTrust: its Deny bindings refuse what they select,
		// opted out or not.
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		crd.SetName(trustCRDName)
		if err := e.objects.Delete(ctx, crd); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 60*time.Second, "the CRD to be gone", func() error {
			if err := e.objects.Get(ctx, client.ObjectKey{Name: trustCRDName}, crd); !apierrors.IsNotFound(err) {
				return fmt.Errorf("CustomResourceDefinition %s: %v, want not found", trustCRDName, err)
			}
			return nil
		})
		refused("an opted-out pod", false, "ValidatingAdmissionPolicy '"+trust+"' with binding '"+trust+"-namespace' denied request: failed to configure binding: no params found")
		e.mustFinding(t, 1, CodeRedirectorTrust, StatusProblem, "not served: RedirectorTrusts cannot be created, and the paramKind of ValidatingAdmissionPolicy meshinit-redirector-trust, meshinit.io/v1alpha1 RedirectorTrust, resolves to nothing. "+
			"An API server that resolved it before finds no RedirectorTrust: it refuses every create and update of a pod or workload its 3 bindings meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace, meshinit-redirector-trust-pod-security select")
		e.mustPlugin(t, 1, []string{"CustomResourceDefinition redirectortrusts.meshinit.io (MI1016)",
			"kubectl apply --server-side -f charts/meshinit/crds/ && helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values"}, "check")

		// What the fix does: the CRD applied again, the RedirectorTrust
		// rendered again; the API server admits again.
		applyCRD()
		put(current, "")
		admitted("an opted-out pod", false)
		admitted("an injected pod", true)
		e.mustFinding(t, 0, CodeRedirectorTrust, StatusOK, trusted)
	})

	t.Run("a user who may not get the RedirectorTrust: MI1016 says so, the rest is checked; get on it alone is enough", func(t *testing.T) {
		// Every read check does (list everything; get the webhook's
		// Service and Secret), but no get of RedirectorTrusts.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "trust-reader"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}},
			{APIGroups: []string{""}, Resources: []string{"services", "secrets"}, Verbs: []string{"get"}},
		}}
		if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "trust-reader"}}
		if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "trust-reader"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "trust-reader"}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		reader := server.UserKubeconfig(t, "trust-reader")
		// findings runs check as the reader: its exit code and findings.
		findings := func() (int, []Finding, error) {
			out, errOut, code := e.plugin(t, reader, "check", "-o", "json")
			var rep CheckReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				return code, nil, fmt.Errorf("exit %d, %v: %s", code, err, errOut)
			}
			return code, rep.Findings, nil
		}
		const forbidden = `cannot be read: RBAC does not allow you to get redirectortrusts.meshinit.io in namespace meshinit-system (needs verb "get" on "redirectortrusts.meshinit.io")`
		testkit.Eventually(t, 30*time.Second, "check as a user who may not get the RedirectorTrust", func() error {
			code, fs, err := findings()
			if err != nil {
				return err
			}
			var problems []string
			for _, f := range fs {
				if f.Status == StatusProblem {
					problems = append(problems, string(f.Code)+" "+f.Object+": "+f.Detail+" / "+f.Fix)
				}
			}
			if code != 1 || len(problems) != 1 || !strings.Contains(problems[0], "MI1016 RedirectorTrust meshinit-system/meshinit-redirector-trust: "+forbidden) ||
				!strings.Contains(problems[0], "as a user who may get redirectortrusts.meshinit.io meshinit-redirector-trust in meshinit-system") {
				return fmt.Errorf("exit %d, problems %q; want 1 and the one MI1016 %q", code, problems, forbidden)
			}
			return nil
		})
		// get on that one RedirectorTrust, by name, in the release namespace.
		if _, err := e.admin.RbacV1().Roles(testNamespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "trust-reader"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{trustResource.Resource}, ResourceNames: []string{"meshinit-redirector-trust"}, Verbs: []string{"get"}},
		}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin.RbacV1().RoleBindings(testNamespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "trust-reader"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "trust-reader"}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, "check as a user who may get the RedirectorTrust alone", func() error {
			code, fs, err := findings()
			if err != nil {
				return err
			}
			for _, f := range fs {
				if f.Code == CodeRedirectorTrust && f.Status == StatusOK && f.Detail == "trusts redirector image "+e.config.Image+" (spec.current)" && code == 0 {
					return nil
				}
			}
			return fmt.Errorf("exit %d, findings %+v; want 0 and MI1016 ok", code, fs)
		})
	})

	t.Run("version: the chart's from its labels, the webhook's from its pods, a replica of another image warned about", func(t *testing.T) {
		e.mustPlugin(t, 0, []string{"chart", "meshinit-", "MI1301", "development build", "MI1302", "no webhook pod runs"}, "version")
		d, err := e.admin.AppsV1().Deployments(testNamespace).Get(ctx, "meshinit-webhook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "meshinit-webhook-old", Namespace: testNamespace, Labels: d.Spec.Selector.MatchLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Image: "registry.example/meshinit/webhook:0.0.9"}}}}
		old = e.createPod(t, old, false)
		defer e.deletePod(t, old)
		e.mustPlugin(t, 0, []string{"webhook     0.0.9", "WARNING", "MI1302", "meshinit-webhook-old runs registry.example/meshinit/webhook:0.0.9",
			"kubectl -n meshinit-system rollout status deployment/meshinit-webhook"}, "version")
		e.mustPlugin(t, 0, []string{"meshinit-webhook-old"}, "version", "-o", "jsonpath={.webhook[*].pod}")
	})

	t.Run("the data plane: a crash-looping redirect, a second redirector, a stale status annotation", func(t *testing.T) {
		// What a kubelet reports for an init container that keeps failing,
		// written as the kubelet writes it: through the status subresource.
		crashing := e.createPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crashing", Namespace: "app"}, Spec: podSpec()}, true)
		const refusal = "apply failed: not applying: 1 rule(s) of another owner would take the TCP traffic"
		e.initStatus(t, crashing, corev1.ContainerStatus{Name: webhook.ContainerName, RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: refusal + "\n"}}})
		defer e.deletePod(t, crashing)
		// One that succeeded after restarts, with what it programmed.
		done := e.createPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done", Namespace: "app"}, Spec: podSpec()}, true)
		const programmed = "IPv4: redirected, 2 chains and 9 rules in nft IPv4 (--iptables-mode=auto)"
		e.initStatus(t, done, corev1.ContainerStatus{Name: webhook.ContainerName, RestartCount: 2,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: programmed + "\n"}}})
		defer e.deletePod(t, done)

		out := e.mustPlugin(t, 1, []string{
			"failing", "MI1107", "meshinit-redirect fails: CrashLoopBackOff, last exit code 1, 4 restarts; it said: " + refusal,
			"MI1109: rules of another owner",
			"kubectl logs crashing -n app -c meshinit-redirect --previous",
			"MI1101,MI1108", "meshinit-redirect restarted 2 times before it succeeded",
		}, "pods", "-n", "app")
		_ = out
		e.mustPlugin(t, 1, []string{programmed, "RESTARTS", "REDIRECT"}, "pods", "-n", "app", "-o", "wide")
		e.mustFinding(t, 1, CodeRedirectFailing, StatusProblem, "app/pod/crashing")
		e.mustFinding(t, 1, CodeRedirectRestarts, StatusInfo, "app/pod/done")
		e.mustPlugin(t, 1, []string{"Run:       waiting CrashLoopBackOff, exit code 1, 4 restarts", "Message:   " + refusal}, "explain", "crashing", "-n", "app")
		rep := e.podsJSONIn(t, 1, "app")
		if p := podNamed(rep, "crashing"); p == nil || p.State != StateFailing || p.Code != CodeRedirectFailing || p.Redirect == nil || p.Redirect.Restarts != 4 {
			t.Errorf("pods -o json: crashing is %+v, want failing (%s) with 4 restarts", p, CodeRedirectFailing)
		}
		e.mustPlugin(t, 1, []string{"crashing", "4"}, "pods", "-n", "app", "-o", `jsonpath={range .workloads[*].pods[?(@.state=="failing")]}{.name} {.redirect.restarts}{end}`)
		e.mustPlugin(t, 1, []string{"kind: PodsReport", "apiVersion: " + reportAPIVersion, "code: MI1107"}, "pods", "-n", "app", "-o", "yaml")
	})

	t.Run("istio-init beside meshinit-redirect: pods and check exit 1 with MI1109", func(t *testing.T) {
		// Created before its namespace opted in (the RedirectPolicy would
		// refuse a NET_ADMIN container in an opted-in namespace), with the
		// init container meshinit gives it there.
		e.createNamespace(t, "twomeshes", nil)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "twomeshes"}, Spec: podSpec()}
		pod = injectedBy(t, pod, map[string]string{webhook.NamespaceLabel: "enabled"}, e.config)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "istio-init", Image: "docker.io/istio/proxyv2:1.24.0",
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}}})
		e.createPod(t, pod, false)
		e.label(t, "twomeshes", webhook.NamespaceLabel, "enabled")
		e.mustPlugin(t, 1, []string{"MI1109: another traffic redirector in the pod: istio-init", "kubectl edit pod/both -n twomeshes"}, "pods", "-n", "twomeshes")
		e.mustFinding(t, 1, CodeSecondRedirector, StatusProblem, "twomeshes/pod/both")
		e.deletePod(t, pod)
	})

	t.Run("a pod injected with another configuration (its status annotation): stale, MI1102", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old-config", Namespace: "app"}, Spec: podSpec()}
		ns, err := e.admin.CoreV1().Namespaces().Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod = injectedBy(t, pod, ns.Labels, e.config)
		status := webhook.Status{InitContainers: []string{webhook.ContainerName}, Config: "0123456789abcdef"}
		pod.Annotations[webhook.StatusAnnotation] = status.String()
		created := e.createPod(t, pod, false)
		defer e.deletePod(t, created)
		e.mustPlugin(t, 1, []string{"stale", "MI1102", `injected with configuration "0123456789abcdef", the installed one is "` + e.config.Status().Config + `"`,
			"kubectl delete pod old-config -n app"}, "pods", "-n", "app")
		e.mustFinding(t, 0, CodePodStale, StatusWarning, "app/pod/old-config")
	})

	t.Run("a stale pod after a configuration change: pods and explain exit 1 with the rollout restart", func(t *testing.T) {
		restore := e.changeConfig(t, func(c string) string {
			return strings.Replace(c, `exclude-outbound-ports: ""`, `exclude-outbound-ports: "22"`, 1)
		})
		defer restore()
		out := e.mustPlugin(t, 1, []string{"stale", `--exclude-outbound-ports "" -> "22"`, "kubectl rollout restart deployment/web -n app"}, "pods", "-n", "app")
		if strings.Count(out, "stale") != 3 { // web's two pods and solo
			t.Errorf("want 3 stale pods")
		}
		e.mustPlugin(t, 1, []string{"State:     stale", "The redirect the installed configuration gives it", "--dport 22 "}, "explain", web[0].Name, "-n", "app")
		js := e.mustPlugin(t, 1, nil, "pods", "-n", "app", "-o", "json")
		var rep PodsReport
		if err := json.Unmarshal([]byte(js), &rep); err != nil || rep.Problems != 3 {
			t.Errorf("-o json: %d problems (%v), want 3", rep.Problems, err)
		}
	})

	t.Run("an uninjected pod in an opted-in namespace: pods exits 1", func(t *testing.T) {
		e.plainPod(t, "late", "before-opt-in", nil)
		e.label(t, "late", webhook.NamespaceLabel, "enabled")
		e.mustPlugin(t, 1, []string{"not-injected (missing)", "MI1103", "kubectl delete pod before-opt-in -n late && kubectl apply -f <its manifest>"}, "pods", "-A")
		e.mustPlugin(t, 0, nil, "pods", "-n", "app")
	})

	t.Run("a RedirectPolicy created after pods that violate it: audit exits 1", func(t *testing.T) {
		excludes := map[string]string{"traffic.meshinit.io/exclude-inbound-ports": "8080"}
		e.bareInjectedPod(t, "app", "legacy", excludes)
		e.deployment(t, "app", "legacy-web", excludes, 1)
		policy := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "meshinit.io/v1alpha1", "kind": "RedirectPolicy",
			"metadata": map[string]any{"name": "require-8080", "namespace": "app"},
			// Only port 8080: interception defaults to Required, every port.
			"spec": map[string]any{"requiredInboundPorts": []any{int64(8080)}, "interception": "AllowOptOut"},
		}}
		if err := e.objects.Create(ctx, policy); err != nil {
			t.Fatal(err)
		}
		defer e.objects.Delete(ctx, policy)
		const msg = "port 8080 is required by RedirectPolicy app/require-8080 and cannot be listed in traffic.meshinit.io/exclude-inbound-ports"
		// The API server's policy informer sees a new RedirectPolicy after a moment.
		testkit.Eventually(t, 30*time.Second, "audit to find the new RedirectPolicy's violations", func() error {
			out, _, code := e.plugin(t, "", "audit", "-n", "app")
			if code != 1 || strings.Count(out, msg) != 3 { // legacy, legacy-web and its pod
				return fmt.Errorf("exit %d, %d refusals naming require-8080, want 1 and 3", code, strings.Count(out, msg))
			}
			return nil
		})
		e.mustPlugin(t, 1, []string{"RedirectPolicies: app/require-8080, meshinit-system/default", "kubectl edit deployment/legacy-web -n app"}, "audit", "-n", "app")
	})

	t.Run("RBAC refusing a read: the error names the verb and resource, exit 1", func(t *testing.T) {
		viewer := server.UserKubeconfig(t, "viewer")
		_, errOut, code := e.plugin(t, viewer, "check")
		if want := `RBAC does not allow you to list mutatingwebhookconfigurations.admissionregistration.k8s.io (needs verb "list" on "mutatingwebhookconfigurations.admissionregistration.k8s.io")`; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
		}
		_, errOut, code = e.plugin(t, viewer, "pods", "-n", "app", "--meshinit-namespace", "meshinit-system")
		if want := "RBAC does not allow you to list configmaps in namespace meshinit-system"; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
		}
	})

	t.Run("a caBundle that does not trust the certificate: check exits 1", func(t *testing.T) {
		e.stopWebhook() // it would put its CA back at once
		other, err := certs.NewCA("someone-else", time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		e.setCABundle(t, other.CertPEM())
		e.mustPlugin(t, 1, []string{
			"endpoint " + endpointAddr + ": ", // not reachable now
			"served by Secret meshinit-system/meshinit-webhook-serving: the caBundle does not trust it for meshinit-webhook.meshinit-system.svc",
			"kubectl -n meshinit-system rollout restart deployment/meshinit-webhook",
		}, "check")
	})

	t.Run("an expired certificate and caBundle: check exits 1", func(t *testing.T) {
		issued := time.Now().Add(-48 * time.Hour)
		ca, err := certs.NewCA("expired", 24*time.Hour, issued)
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := ca.IssueServing(certs.DNSNames("meshinit-webhook", testNamespace), nil, 12*time.Hour, issued)
		if err != nil {
			t.Fatal(err)
		}
		secret, err := e.admin.CoreV1().Secrets(testNamespace).Get(ctx, "meshinit-webhook-serving", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data = map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM()}
		if _, err := e.admin.CoreV1().Secrets(testNamespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.setCABundle(t, ca.CertPEM())
		e.mustPlugin(t, 1, []string{
			"x509: certificate has expired or is not yet valid",
			"served by Secret meshinit-system/meshinit-webhook-serving: expired 36 hours ago",
			"in the caBundle, signed the serving certificate: expired 24 hours ago",
			`kubectl -n meshinit-system patch secret meshinit-webhook-signer --type=json -p '[{"op":"remove","path":"/data"}]' && kubectl -n meshinit-system patch secret meshinit-webhook-serving --type=json -p '[{"op":"remove","path":"/data"}]'`,
		}, "check")
	})
}

// TestRedirectorTrustCRDMissing: an API server that gets the redirector
// trust policy while it does not serve RedirectorTrusts (as one that
// starts without the CRD) cannot resolve the policy's paramKind, and with
// failurePolicy Fail refuses every pod the policy matches, also in a
// namespace none of its bindings selects. check says so (MI1016), and
// what its fix does (the CRD, then the RedirectorTrust) admits them again.
func TestRedirectorTrustCRDMissing(t *testing.T) {
	e := newAPIServerEnv(t)
	ctx := context.Background()
	e.createNamespace(t, testNamespace, nil)
	var others, trust []*unstructured.Unstructured
	for _, o := range chartObjects(t, map[string]any{"webhook": map[string]any{"failurePolicy": "Ignore", "timeoutSeconds": 1}}) {
		if o.GetKind() == trustKind || o.GetName() == trustCRDName {
			trust = append(trust, o)
		} else {
			others = append(others, o)
		}
	}
	if len(trust) != 2 {
		t.Fatalf("the chart renders %d objects of the redirector trust's CRD and kind, want 2 (the CRD, the RedirectorTrust)", len(trust))
	}
	e.apply(t, others)
	e.createNamespace(t, "elsewhere", nil)
	dryRun := func() error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trust-probe", Namespace: "elsewhere"}, Spec: podSpec()}
		_, err := e.admin.CoreV1().Pods("elsewhere").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	const message = "ValidatingAdmissionPolicy 'meshinit-redirector-trust' denied request: failed to configure policy: failed to find resource referenced by paramKind"
	testkit.Eventually(t, 30*time.Second, "a pod in a namespace no binding selects to be refused", func() error {
		if err := dryRun(); err == nil || !strings.Contains(err.Error(), message) {
			return fmt.Errorf("created: %v, want refused with %q", err, message)
		}
		return nil
	})
	e.mustFinding(t, 1, CodeRedirectorTrust, StatusProblem, "one that starts without the CRD cannot resolve the paramKind and refuses every create and update of a pod or workload the policy matches, in every namespace (failurePolicy Fail)")
	e.mustPlugin(t, 1, []string{"CustomResourceDefinition redirectortrusts.meshinit.io (MI1016)",
		"kubectl apply --server-side -f charts/meshinit/crds/ && helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values"}, "check")

	e.apply(t, trust)
	testkit.Eventually(t, 30*time.Second, "the pod to be admitted", dryRun)
	e.mustFinding(t, 1, CodeRedirectorTrust, StatusOK, "trusts redirector image ") // the webhook does not run here: check still exits 1
}

// install applies the chart's objects as helm install does, with the
// webhook's failurePolicy Ignore and a 1s timeout (the API server here
// cannot reach Services, so pods are created as the webhook injects them:
// see createPod) and a default RedirectPolicy that lets pods opt out (as
// the end-to-end tests install it); runs the webhook; and does what a
// cluster's controllers would.
func (e *apiServerEnv) install(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	e.createNamespace(t, testNamespace, nil)
	values := map[string]any{
		"webhook": map[string]any{"failurePolicy": "Ignore", "timeoutSeconds": 1},
		"policy":  map[string]any{"defaultRedirectPolicy": map[string]any{"interception": "AllowOptOut"}},
	}
	config := e.applyChart(t, values)
	d, err := e.admin.AppsV1().Deployments(testNamespace).Get(ctx, "meshinit-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.runWebhook(t, d, config)

	// The Deployment's controller: both replicas ready.
	d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
	if _, err := e.admin.AppsV1().Deployments(testNamespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The EndpointSlice controller: one ready endpoint.
	host, port, _ := strings.Cut(endpointAddr, ":")
	var portNumber int32
	fmt.Sscan(port, &portNumber)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "meshinit-webhook-x1", Namespace: testNamespace, Labels: map[string]string{discoveryv1.LabelServiceName: "meshinit-webhook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https-webhook"), Port: &portNumber, Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if _, err := e.admin.DiscoveryV1().EndpointSlices(testNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.typeCheck(t)
	testkit.Eventually(t, 30*time.Second, "the webhook to publish its CA in the caBundle", func() error {
		mwc, err := e.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "meshinit", metav1.GetOptions{})
		if err == nil && len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			err = fmt.Errorf("no caBundle yet")
		}
		return err
	})
}

// applyChart applies the chart's objects rendered with values (and the
// MutatingAdmissionPolicy API, which this API server serves) as helm
// install or upgrade does, and returns the webhook's configuration file,
// which e.config then holds parsed.
func (e *apiServerEnv) applyChart(t *testing.T, values map[string]any) string {
	t.Helper()
	objs := chartObjects(t, values)
	e.apply(t, objs)
	var config string
	e.config, config = chartConfig(t, objs)
	return config
}

// chartObjects are the chart's objects rendered with values, its CRDs
// first, as helm install renders them for this API server.
func chartObjects(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	return charts.MustObjects(t, charts.Options{Namespace: testNamespace, Values: values, IncludeCRDs: true, KubeVersion: "v1.37.2", APIVersions: []string{mapAPI}}, false)
}

// apply applies objs in order, as helm does, each retried until the API
// server takes it (a custom resource once its CRD is served).
func (e *apiServerEnv) apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("applying %s %s", o.GetKind(), o.GetName()), func() error {
			return e.objects.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("helm"), client.ForceOwnership)
		})
	}
}

// typeCheck does what kube-controller-manager's
// validatingadmissionpolicy-status controller does: the API server's type
// checker, on its types, for every ValidatingAdmissionPolicy.
func (e *apiServerEnv) typeCheck(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	checker, err := testkit.NewTypeChecker(e.server.Config)
	if err != nil {
		t.Fatal(err)
	}
	policies, err := e.admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range policies.Items {
		p.Status.ObservedGeneration = p.Generation
		p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: testkit.CheckTypes(checker, &p)}
		if _, err := e.admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// runWebhook runs the webhook command with the arguments of the chart's
// Deployment (self-managed certificates in the chart's Secret, the
// caBundle kept), on a local port, with config, the ConfigMap's file.
func (e *apiServerEnv) runWebhook(t *testing.T, d *appsv1.Deployment, config string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), configKey)
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port, probes := testkit.FreePort(t), testkit.FreePort(t)
	e.webhookAddr = fmt.Sprintf("127.0.0.1:%d", port)
	args := append(d.Spec.Template.Spec.Containers[0].Args, // later flags win
		"--kubeconfig="+e.server.Kubeconfig, "--config="+path, "--namespace="+testNamespace, "--cert-dir="+t.TempDir(),
		"--host=127.0.0.1", fmt.Sprintf("--port=%d", port), "--metrics-bind-address=0",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probes), "--shutdown-delay=-1s", "--log-format=text")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- webhook.Main(ctx, args, io.Discard, &testWriter{t}) }()
	stopped := false
	e.stopWebhook = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(e.stopWebhook)
	testkit.AwaitReady(t, 90*time.Second, "webhook.Main", fmt.Sprintf("http://127.0.0.1:%d/readyz", probes), done)
}

// testWriter logs what is written to it.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (e *apiServerEnv) createNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	testkit.Namespace(t, e.server.Config, ns)
}

func (e *apiServerEnv) label(t *testing.T, namespace, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := e.admin.CoreV1().Namespaces().Patch(context.Background(), namespace, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podSpec is the test's pods' spec: an app that keeps to what a
// RedirectPolicy requires of every container (its own UID and GID, no
// privilege escalation, no capabilities), so the policies refuse these pods
// for what each test changes, not for the app.
func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}}}
}

// createPod creates pod, injected as the webhook injects it under the
// installed configuration when inject is set (the API server here cannot
// call the webhook: the Service is not routed), unless the API server
// injects it itself (apiServerInjects).
func (e *apiServerEnv) createPod(t *testing.T, pod *corev1.Pod, inject bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if inject && !e.apiServerInjects {
		ns, err := e.admin.CoreV1().Namespaces().Get(ctx, pod.Namespace, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod = injectedBy(t, pod, ns.Labels, e.config)
	}
	created, err := e.admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return created
}

func (e *apiServerEnv) bareInjectedPod(t *testing.T, namespace, name string, annotations map[string]string) {
	t.Helper()
	e.createPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: annotations}, Spec: podSpec()}, true)
}

func (e *apiServerEnv) plainPod(t *testing.T, namespace, name string, labels map[string]string) {
	t.Helper()
	e.createPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Spec: podSpec()}, false)
}

// deployment creates a Deployment, its ReplicaSet and its pods, as their
// controllers and the webhook would.
func (e *apiServerEnv) deployment(t *testing.T, namespace, name string, annotations map[string]string, replicas int) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}, Spec: podSpec()}
	d, err := e.admin.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := func(kind string, meta metav1.ObjectMeta) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: meta.Name, UID: meta.UID, Controller: ptr.To(true)}}
	}
	rs, err := e.admin.AppsV1().ReplicaSets(namespace).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-5d9c", Namespace: namespace, OwnerReferences: owner("Deployment", d.ObjectMeta)},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range replicas {
		pod := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: podSpec()}
		pod.Name, pod.Namespace, pod.OwnerReferences = fmt.Sprintf("%s-%c", rs.Name, 'a'+i), namespace, owner("ReplicaSet", rs.ObjectMeta)
		pods = append(pods, e.createPod(t, pod, true))
	}
	return pods
}

// changeConfig changes the webhook's configuration file in its ConfigMap,
// as helm upgrade with other values does; restore puts it back.
func (e *apiServerEnv) changeConfig(t *testing.T, change func(string) string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	cms := e.admin.CoreV1().ConfigMaps(testNamespace)
	cm, err := cms.Get(ctx, "meshinit-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := cm.Data[configKey]
	cm.Data[configKey] = change(before)
	if cm.Data[configKey] == before {
		t.Fatal("the configuration did not change")
	}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func() {
		cm.Data[configKey] = before
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
}

// setCABundle writes pem into every webhook of the chart's
// MutatingWebhookConfiguration.
func (e *apiServerEnv) setCABundle(t *testing.T, pem []byte) {
	t.Helper()
	mwcs := e.admin.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mwc, err := mwcs.Get(context.Background(), "meshinit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.CABundle = pem
	}
	if _, err := mwcs.Update(context.Background(), mwc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// initStatus writes status as the pod's only init container status, as
// the kubelet would through the status subresource.
func (e *apiServerEnv) initStatus(t *testing.T, pod *corev1.Pod, status corev1.ContainerStatus) {
	t.Helper()
	pod.Status.Phase = corev1.PodPending
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{status}
	if _, err := e.admin.CoreV1().Pods(pod.Namespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

func (e *apiServerEnv) deletePod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := e.admin.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Error(err)
	}
}

// podsJSONIn runs pods -n namespace -o json, which must exit with code.
func (e *apiServerEnv) podsJSONIn(t *testing.T, code int, namespace string) PodsReport {
	t.Helper()
	var rep PodsReport
	if err := json.Unmarshal([]byte(e.mustPlugin(t, code, nil, "pods", "-n", namespace, "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// podNamed is the report of the pod named name, nil without one.
func podNamed(rep PodsReport, name string) *PodReport {
	for _, w := range rep.Workloads {
		for i := range w.Pods {
			if w.Pods[i].Name == name {
				return &w.Pods[i]
			}
		}
	}
	return nil
}

// newTrust is an empty RedirectorTrust for e.objects, whose scheme does
// not know meshinit's kinds.
func newTrust() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind(trustKind))
	return u
}

// mustFinding runs check, which must exit with code, and fails unless it
// reports a finding of code with status whose detail holds detail: read
// with -o jsonpath, as a script would.
func (e *apiServerEnv) mustFinding(t *testing.T, code int, c Code, status Status, detail string) {
	t.Helper()
	out := e.mustPlugin(t, code, nil, "check", "-o", fmt.Sprintf(`jsonpath={range .findings[?(@.code=="%s")]}{.status}: {.detail}{"\n"}{end}`, c))
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, string(status)+": ") && strings.Contains(line, detail) {
			return
		}
	}
	t.Errorf("check reports no %s finding %s about %q:\n%s", status, c, detail, out)
}
