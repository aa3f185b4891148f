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

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/e2e/harness"
)

const (
	injectionLabel   = harness.InjectionLabel
	injectLabel      = harness.InjectLabel
	redirectName     = harness.RedirectName
	excludeInbound   = harness.ExcludeInbound
	release          = harness.Release
	releaseNamespace = harness.ReleaseNamespace
	webhookName      = harness.WebhookName
	webhookSelector  = harness.WebhookSelector
)

// TestEndToEnd installs the chart on a real cluster and checks, in order,
// what a user would see: injection and redirected traffic, opt-outs, the
// policy's refusals (also with the webhook down), a re-run redirector,
// changed values, and uninstalling; once for each injector (a subtest for
// each: the webhook, then the policies inside the API server), the steps
// that do not depend on the injector (the re-run redirector) once. Later
// steps depend on earlier ones, so a failed step that leaves nothing to
// test ends the subtest.
func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Minute)
	defer cancel()
	began := time.Now()
	e := setup(t, ctx)
	for _, injector := range []string{"webhook", "policy"} {
		t.Run(injector, func(t *testing.T) { endToEnd(t, ctx, e, injector) })
	}
	t.Logf("timing: total %.1fs", time.Since(began).Seconds())
}

// endToEnd is TestEndToEnd's steps with injector (the chart's value).
func endToEnd(t *testing.T, ctx context.Context, e *env, injector string) {
	began := time.Now()
	img := e.images
	policyMode := injector == "policy"
	// install is e.install with the injector.
	install := func(t *testing.T, vals map[string]any) {
		t.Helper()
		if vals == nil {
			vals = map[string]any{}
		}
		vals["injector"] = injector
		e.install(t, ctx, vals)
	}

	create := func(ns, manifest string) error {
		_, err := e.Kubectl(ctx, manifest, "-n", ns, "create", "-f", "-")
		return err
	}
	mustCreate := func(t *testing.T, ns, manifest string) {
		t.Helper()
		if err := create(ns, manifest); err != nil {
			t.Fatal(err)
		}
	}
	timed := func(name string, f func(t *testing.T)) bool {
		step := time.Now()
		ok := t.Run(name, f)
		t.Logf("timing: %q %.1fs", name, time.Since(step).Seconds())
		return ok
	}
	installed := false
	t.Cleanup(func() {
		if installed {
			e.uninstall(t, context.Background())
		}
	})

	if policyMode && !timed("chart installed with the policy injector: no webhook, the policies in place", func(t *testing.T) {
		installed = true
		install(t, nil)
		if out, err := e.Kubectl(ctx, "", "-n", releaseNamespace, "get", "deployment,service,secret", "-l", "app.kubernetes.io/instance="+release, "-o", "name"); err != nil || out != "" {
			t.Errorf("objects of the webhook: %q (%v), want none", out, err)
		}
		if out, err := e.Kubectl(ctx, "", "get", "mutatingwebhookconfiguration", "-l", "app.kubernetes.io/instance="+release, "-o", "name"); err != nil || out != "" {
			t.Errorf("webhook configurations: %q (%v), want none", out, err)
		}
		if got := e.must(t, ctx, "get", "mutatingadmissionpolicy,mutatingadmissionpolicybinding", "-l", "app.kubernetes.io/instance="+release, "-o", "name"); got != "mutatingadmissionpolicy.admissionregistration.k8s.io/"+release+"-inject\nmutatingadmissionpolicybinding.admissionregistration.k8s.io/"+release+"-inject\nmutatingadmissionpolicybinding.admissionregistration.k8s.io/"+release+"-inject-pod" {
			t.Errorf("mutating policies %q", got)
		}
	}) {
		t.FailNow()
	}
	if !policyMode && !timed("chart installed with self-managed certificates, both webhook replicas Ready", func(t *testing.T) {
		installed = true
		install(t, nil)
		if got := e.must(t, ctx, "-n", releaseNamespace, "get", "deployment", webhookName, "-o", "jsonpath={.status.readyReplicas}"); got != "2" {
			t.Errorf("ready replicas %q, want 2", got)
		}
		// Self-managed mode: the webhook wrote its CA into the configuration.
		if err := eventually(ctx, 60*time.Second, func() error {
			ca, err := e.Kubectl(ctx, "", "get", "mutatingwebhookconfiguration", release, "-o", "jsonpath={.webhooks[*].clientConfig.caBundle}")
			if err != nil || ca == "" {
				return fmt.Errorf("no caBundle in MutatingWebhookConfiguration %s (%v)", release, err)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}) {
		t.FailNow()
	}

	if !policyMode {
		timed("the webhook's /metrics, scraped as Prometheus with the chart's metrics-reader role does, serves every metric the alerts and the dashboard name", func(t *testing.T) {
			scrapeMetrics(t, ctx, e)
		})
	}

	timed("kube-controller-manager type-checks the ValidatingAdmissionPolicies without warnings", func(t *testing.T) {
		policies := []string{release + "-redirectpolicy", release + "-pod-security"}
		if policyMode {
			policies = append(policies, release+"-inject", release+"-inject-podsecurity")
		}
		for _, policy := range policies {
			// kube-controller-manager type-checks each policy's every
			// expression against the seven kinds it matches, one policy at a
			// time; the RedirectPolicy's (some 300 variables since issue 13)
			// took 34 s on a loaded 2-CPU machine, over 60 s beside other
			// tests, and since issue 21's rules over 150 s beside them. It
			// is status only: admission does not wait for it.
			if err := eventually(ctx, 5*time.Minute, func() error {
				checked, err := e.Kubectl(ctx, "", "get", "validatingadmissionpolicy", policy, "-o", "jsonpath={.status.observedGeneration}")
				if err != nil || checked == "" {
					return fmt.Errorf("ValidatingAdmissionPolicy %s not type-checked yet (%v)", policy, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if warnings := e.must(t, ctx, "get", "validatingadmissionpolicy", policy, "-o", "jsonpath={.status.typeChecking.expressionWarnings}"); warnings != "" {
				t.Errorf("%s: type checking warnings: %s", policy, warnings)
			}
		}
	})

	timed("helm test: the chart's test pod's connection reaches its proxy", func(t *testing.T) {
		if err := e.HelmTest(ctx); err != nil {
			t.Fatal(err)
		}
	})

	labelled := e.createNamespace(t, ctx, "e2e-injected", map[string]string{injectionLabel: "enabled"})
	plain := e.createNamespace(t, ctx, "e2e-plain", nil)

	// The client runs in the unlabelled namespace, left alone, so its own
	// connections go straight out.
	var clientIP string
	if !timed("an unlabelled namespace is left alone", func(t *testing.T) {
		mustCreate(t, plain, img.PlainPod("client", nil, nil))
		clientIP = e.ready(t, ctx, plain, "client")
		if got := e.initContainers(t, ctx, plain, "client"); len(got) != 0 {
			t.Errorf("init containers %v, want none", got)
		}
	}) {
		t.FailNow()
	}

	var appIP string
	if !timed("a pod in a labelled namespace gets meshinit-redirect, which completes", func(t *testing.T) {
		mustCreate(t, labelled, img.AppPod("app", nil, map[string]string{excludeInbound: "8081"}))
		if got := e.initContainers(t, ctx, labelled, "app"); !slices.Equal(got, []string{redirectName}) {
			t.Fatalf("init containers %v, want [%s]", got, redirectName)
		}
		appIP = e.ready(t, ctx, labelled, "app")
		code := e.must(t, ctx, "-n", labelled, "get", "pod", "app", "-o", `jsonpath={.status.initContainerStatuses[?(@.name=="`+redirectName+`")].state.terminated.exitCode}`)
		if code != "0" {
			t.Errorf("%s exit code %q, want 0", redirectName, code)
		}
	}) {
		t.FailNow()
	}

	inbound := func(t *testing.T) {
		want := "proxy-in orig=" + appIP + ":8080"
		if got := e.dial(t, ctx, plain, "client", "client", appIP+":8080"); got != want {
			t.Errorf("connection to the app's port 8080 answered %q, want %q", got, want)
		}
	}
	timed("inbound to the app's port arrives at the proxy with its original destination", inbound)

	timed("an inbound port excluded by annotation reaches the app directly", func(t *testing.T) {
		if got := e.dial(t, ctx, plain, "client", "client", appIP+":8081"); got != "app" {
			t.Errorf("connection to the excluded port 8081 answered %q, want %q", got, "app")
		}
	})

	timed("outbound from the app container arrives at the outbound proxy port", func(t *testing.T) {
		want := "proxy-out orig=" + clientIP + ":8080"
		if got := e.dial(t, ctx, labelled, "app", "app", clientIP+":8080"); got != want {
			t.Errorf("app's connection to %s:8080 answered %q, want %q", clientIP, got, want)
		}
		// The proxy's own connections (UID 1337) are not redirected.
		if got := e.dial(t, ctx, labelled, "app", "proxy-out", clientIP+":8080"); got != "client" {
			t.Errorf("proxy's connection to %s:8080 answered %q, want %q", clientIP, got, "client")
		}
	})

	timed("with capture-dns=all, the app's DNS over UDP and TCP reaches the DNS proxy, the proxy's own goes to the nameserver", func(t *testing.T) {
		// The local cluster has no DNS server: the test brings a tiny one
		// (internal/testdns, in the test app) as a pod in the plain
		// namespace, and asks it by its pod IP.
		mustCreate(t, plain, img.NameserverPod("nameserver"))
		nameserver := net.JoinHostPort(e.ready(t, ctx, plain, "nameserver"), "53")
		mustCreate(t, labelled, img.DNSAppPod("dns-app"))
		if args := e.must(t, ctx, "-n", labelled, "get", "pod", "dns-app", "-o", `jsonpath={.spec.initContainers[?(@.name=="`+redirectName+`")].args}`); !strings.Contains(args, "--capture-dns=all") {
			t.Fatalf("%s args %s, want --capture-dns=all", redirectName, args)
		}
		e.ready(t, ctx, labelled, "dns-app")
		for _, c := range []struct{ container, network, want string }{
			{"app", "udp", "proxy-dns"},
			{"app", "tcp", "proxy-dns orig=" + nameserver},
			{"proxy-dns", "udp", "nameserver"},
			{"proxy-dns", "tcp", "nameserver"},
		} {
			got, err := e.AskDNS(ctx, labelled, "dns-app", c.container, c.network, nameserver)
			if err != nil {
				t.Errorf("%s: %v", c.container, err)
			} else if got != c.want {
				t.Errorf("%s's DNS over %s to %s answered by %q, want %q", c.container, c.network, nameserver, got, c.want)
			}
		}
		// The app's other TCP still goes to the outbound proxy.
		if got, want := e.dial(t, ctx, labelled, "dns-app", "app", clientIP+":8080"), "proxy-out orig="+clientIP+":8080"; got != want {
			t.Errorf("app's connection answered %q, want %q", got, want)
		}
		if t.Failed() {
			if rules, err := e.NATRules(ctx, labelled, "dns-app"); err == nil {
				t.Logf("dns-app's nat rules:\n%s", rules)
			}
		}
	})

	timed("a pod labelled meshinit.io/inject=false is left alone (default RedirectPolicy: AllowOptOut, as the harness installs it)", func(t *testing.T) {
		mustCreate(t, labelled, img.PlainPod("opted-out", map[string]string{injectLabel: "false"}, nil))
		if got := e.initContainers(t, ctx, labelled, "opted-out"); len(got) != 0 {
			t.Errorf("init containers %v, want none", got)
		}
		ip := e.ready(t, ctx, labelled, "opted-out")
		if got := e.dial(t, ctx, plain, "client", "client", ip+":8080"); got != "opted-out" {
			t.Errorf("connection to the opted-out pod answered %q, want %q", got, "opted-out")
		}
	})

	timed("the redirector run again in the running pod succeeds on the existing rules", func(t *testing.T) {
		if policyMode {
			t.Log("not again in policy mode: what the redirector does does not depend on the injector")
			return
		}
		// An ephemeral container with the init container's image and
		// arguments and the same capabilities (kubectl debug's netadmin
		// profile adds NET_ADMIN and NET_RAW) runs `redirector apply` in the
		// pod's network namespace, over the rules the init container made:
		// what a restarted init container does.
		args := strings.Fields(e.must(t, ctx, "-n", labelled, "get", "pod", "app", "-o", `jsonpath={.spec.initContainers[?(@.name=="`+redirectName+`")].args[*]}`))
		if len(args) == 0 || args[0] != "apply" {
			t.Fatalf("%s args %q, want apply ...", redirectName, args)
		}
		// Such a container could rewrite the rules: the RedirectPolicy
		// refuses it (ephemeral containers are checked like any), unless
		// interception is Optional with no port listed. The test makes the
		// default RedirectPolicy so for the re-runs.
		debug := func(name string) (string, error) {
			return e.Kubectl(ctx, "", append([]string{"-n", labelled, "debug", "app", "--container", name, "--image", img.Redirector, "--profile", "netadmin", "--arguments-only", "--"}, args...)...)
		}
		if _, err := debug("rerun-0"); err == nil || !strings.Contains(err.Error(), "container rerun-0 must not add capability NET_ADMIN") {
			t.Errorf("kubectl debug --profile netadmin: %v; want the RedirectPolicy's refusal", err)
		}
		interception := func(to string) {
			e.must(t, ctx, "-n", releaseNamespace, "patch", "redirectpolicy", "default", "--type", "merge", "-p", `{"spec":{"interception":"`+to+`"}}`)
		}
		interception("Optional")
		defer interception("AllowOptOut")
		for _, name := range []string{"rerun-1", "rerun-2"} {
			// The API server's policy informer sees the RedirectPolicy's
			// change after a moment.
			if err := eventually(ctx, 60*time.Second, func() error { _, err := debug(name); return err }); err != nil {
				t.Fatal(err)
			}
			var code string
			if err := eventually(ctx, 90*time.Second, func() error {
				code = e.must(t, ctx, "-n", labelled, "get", "pod", "app", "-o", `jsonpath={.status.ephemeralContainerStatuses[?(@.name=="`+name+`")].state.terminated.exitCode}`)
				if code == "" {
					return fmt.Errorf("ephemeral container %s has not finished", name)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if code != "0" {
				logs, _ := e.Kubectl(ctx, "", "-n", labelled, "logs", "app", "-c", name)
				t.Fatalf("redirector run again (%s) exited %s: %s", name, code, logs)
			}
		}
		inbound(t)
		if got := e.dial(t, ctx, plain, "client", "client", appIP+":8081"); got != "app" {
			t.Errorf("after the re-runs the excluded port answered %q, want %q", got, "app")
		}
	})

	timed("the policy rejects a Deployment excluding a required port, with its message", func(t *testing.T) {
		e.apply(t, ctx, harness.RequiredInboundPortPolicy(labelled, "require-8080", 8080))
		defer e.must(t, ctx, "-n", labelled, "delete", "redirectpolicy", "require-8080")
		deployment := img.Deployment(labelled, "excludes-8080", map[string]string{excludeInbound: "8000-8090"})
		want := "port 8080 is required by RedirectPolicy " + labelled + "/require-8080 and cannot be listed in " + excludeInbound
		// The API server's policy informer sees a new RedirectPolicy after
		// a moment.
		if err := eventually(ctx, 60*time.Second, func() error {
			_, err := e.Kubectl(ctx, deployment, "apply", "--dry-run=server", "-f", "-")
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("kubectl apply --dry-run=server: %v; want an error containing %q", err, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_, err := e.Kubectl(ctx, deployment, "apply", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("kubectl apply: %v; want an error containing %q", err, want)
		}
		if out, err := e.Kubectl(ctx, "", "-n", labelled, "get", "deployment", "excludes-8080", "--ignore-not-found", "-o", "name"); err != nil || out != "" {
			t.Errorf("the Deployment exists after being rejected: %q, %v", out, err)
		}
	})

	timed("a pod's author cannot go around the proxy: a forged meshinit-redirect is replaced, the proxy's UID is refused", func(t *testing.T) {
		// The status annotation of an injected pod, as a server-side dry
		// run shows anyone who may create pods.
		status, err := e.Kubectl(ctx, img.AppPod("probe", nil, nil), "-n", labelled, "create", "--dry-run=server", "-f", "-",
			"-o", `jsonpath={.metadata.annotations.meshinit\.io/status}`)
		if err != nil || status == "" {
			t.Fatalf("dry-run status annotation %q: %v", status, err)
		}
		mustCreate(t, labelled, img.ForgedAppPod("forged", status))
		got := e.must(t, ctx, "-n", labelled, "get", "pod", "forged", "-o",
			`jsonpath={.spec.initContainers[?(@.name=="`+redirectName+`")].image} {.spec.initContainers[?(@.name=="`+redirectName+`")].args[0]}`)
		if want := img.Redirector + " apply"; got != want {
			t.Errorf("forged pod's %s runs %q, want the webhook's %q", redirectName, got, want)
		}
		ip := e.ready(t, ctx, labelled, "forged")
		want := "proxy-in orig=" + ip + ":8080"
		if got := e.dial(t, ctx, plain, "client", "client", ip+":8080"); got != want {
			t.Errorf("connection to the forged pod's port 8080 answered %q, want %q", got, want)
		}

		e.apply(t, ctx, harness.RequiredOutboundPortPolicy(labelled, "require-443", 443))
		defer e.must(t, ctx, "-n", labelled, "delete", "redirectpolicy", "require-443")
		wantErr := "container sneaky must set securityContext.runAsUser (its own or the pod's) to a UID other than the proxy's 1337"
		if err := eventually(ctx, 60*time.Second, func() error {
			err := create(labelled, img.ProxyUIDPod("sneaky"))
			if err == nil {
				e.must(t, ctx, "-n", labelled, "delete", "pod", "sneaky", "--wait=false")
			}
			if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), labelled+"/require-443") {
				return fmt.Errorf("creating a pod running as the proxy UID: %v; want an error containing %q and the RedirectPolicy", err, wantErr)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	timed("in a namespace labelled meshinit.io/pod-security=baseline (PodSecurity's own enforce privileged), an injected pod is admitted and its traffic redirected; a hostPath pod is refused", func(t *testing.T) {
		baseline := e.createNamespace(t, ctx, "e2e-baseline", map[string]string{
			injectionLabel: "enabled", harness.PodSecurityLabel: "baseline", harness.EnforceLabel: "privileged"})
		want := `violates PodSecurity "baseline:v1.37" (namespace label ` + harness.PodSecurityLabel + `): hostPath volumes (volume "host")`
		// The API server's policy informer sees the new namespace after a moment.
		if err := eventually(ctx, 60*time.Second, func() error {
			err := create(baseline, img.HostPathPod("host"))
			if err == nil {
				e.must(t, ctx, "-n", baseline, "delete", "pod", "host", "--wait=false")
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("creating a hostPath pod: %v; want an error containing %q", err, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, baseline, img.AppPod("app", nil, nil))
		if got := e.initContainers(t, ctx, baseline, "app"); !slices.Equal(got, []string{redirectName}) {
			t.Fatalf("init containers %v, want [%s]", got, redirectName)
		}
		ip := e.ready(t, ctx, baseline, "app")
		if got, want := e.dial(t, ctx, plain, "client", "client", ip+":8080"), "proxy-in orig="+ip+":8080"; got != want {
			t.Errorf("connection to the app's port 8080 answered %q, want %q", got, want)
		}
	})

	timed("changed chart values are picked up by new pods", func(t *testing.T) {
		// Like helm upgrade: the chart re-rendered with the webhook
		// excluding outbound port 8080 for every pod; the config change
		// rolls the webhook.
		install(t, map[string]any{"inject": map[string]any{
			"redirect": map[string]any{"exclude-outbound-ports": "8080"},
		}})
		// Until the API server's view of the webhook's endpoints catches
		// up, a review may still reach a replaced replica.
		if err := eventually(ctx, 60*time.Second, func() error {
			args, err := e.Kubectl(ctx, img.AppPod("app-upgraded", nil, nil), "-n", labelled, "create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.initContainers[*].args}")
			if err != nil || !strings.Contains(args, "--exclude-outbound-ports=8080") {
				return fmt.Errorf("dry-run pod's %s args %s (%v), want --exclude-outbound-ports=8080", redirectName, args, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, labelled, img.AppPod("app-upgraded", nil, nil))
		e.ready(t, ctx, labelled, "app-upgraded")
		if got := e.dial(t, ctx, labelled, "app-upgraded", "app", clientIP+":8080"); got != "client" {
			args := e.must(t, ctx, "-n", labelled, "get", "pod", "app-upgraded", "-o", `jsonpath={.spec.initContainers[*].args}`)
			t.Errorf("new pod's connection to the now excluded port answered %q, want %q (%s args %s)", got, "client", redirectName, args)
		}
		// The pod created before is unchanged.
		if got := e.dial(t, ctx, labelled, "app", "app", clientIP+":8080"); got != "proxy-out orig="+clientIP+":8080" {
			t.Errorf("old pod's connection answered %q, want it still redirected", got)
		}
	})

	timed("a pod with an annotation it cannot use is refused, naming the annotation and the value", func(t *testing.T) {
		want := `meshinit: pod not injected: invalid annotation ` + excludeInbound + ` "80-": "80-" is not a port number or range (want 1-65535, or first-last)`
		if err := eventually(ctx, 60*time.Second, func() error {
			err := create(labelled, img.PlainPod("bad-annotation", nil, map[string]string{excludeInbound: "80-"}))
			if err == nil {
				e.must(t, ctx, "-n", labelled, "delete", "pod", "bad-annotation", "--wait=false")
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("creating the pod: %v; want an error containing %q", err, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	if !policyMode {
		timed("with the webhook scaled to zero and failurePolicy Ignore, the policy rejects an uninjected pod", func(t *testing.T) {
			install(t, map[string]any{"webhook": map[string]any{"replicas": 0, "failurePolicy": "Ignore"}})
			if pods := e.must(t, ctx, "-n", releaseNamespace, "get", "pods", "-l", webhookSelector, "-o", "name"); pods != "" {
				t.Fatalf("webhook pods left at replicas 0: %s", pods)
			}
			got := strings.Fields(e.must(t, ctx, "get", "mutatingwebhookconfiguration", release, "-o", "jsonpath={.webhooks[*].failurePolicy}"))
			if len(got) == 0 || slices.ContainsFunc(got, func(p string) bool { return p != "Ignore" }) {
				t.Fatalf("failurePolicy of the webhooks %q, want Ignore", got)
			}
			want := "pod arrived without the meshinit-redirect init container"
			err := create(labelled, img.PlainPod("uninjected", nil, nil))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("creating a pod: %v; want an error containing %q", err, want)
			}
			// Opting out is still allowed (AllowOptOut).
			mustCreate(t, labelled, img.PlainPod("opted-out-2", map[string]string{injectLabel: "false"}, nil))
			e.ready(t, ctx, labelled, "opted-out-2")
			install(t, nil)
		})
	}

	timed("after uninstalling, pods in a labelled namespace are created and run", func(t *testing.T) {
		installed = false
		e.uninstall(t, ctx)
		// The API server drops the webhook and the policies after a moment:
		// until then a pod is refused, or (policy mode) injected.
		name := "after-uninstall"
		if err := eventually(ctx, 60*time.Second, func() error {
			inits, err := e.Kubectl(ctx, img.PlainPod(name, nil, nil), "-n", labelled, "create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.initContainers[*].name}")
			if err != nil || inits != "" {
				return fmt.Errorf("a dry-run pod: init containers %q (%v)", inits, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, labelled, img.PlainPod(name, nil, nil))
		e.ready(t, ctx, labelled, name)
		if got := e.initContainers(t, ctx, labelled, name); len(got) != 0 {
			t.Errorf("init containers %v, want none", got)
		}
	})
	t.Logf("timing: %s total %.1fs", injector, time.Since(began).Seconds())
}

// scrapeMetrics scrapes a webhook pod's /metrics on the local cluster as a
// Prometheus bound to the chart's metrics-reader ClusterRole does (a
// ServiceAccount token, HTTPS, the webhook's authentication and
// authorization of the scraper), and checks that every metric the chart's
// alerts, dashboard and the alerts' unit tests name is served
// (charts.UnservedMonitoringNames).
func scrapeMetrics(t *testing.T, ctx context.Context, e *env) {
	if !e.IsLocal() {
		t.Skip("skipped: the webhook pods' addresses are reached from this host on the local cluster only")
	}
	const scraper = "e2e-metrics-scraper"
	e.must(t, ctx, "-n", releaseNamespace, "create", "serviceaccount", scraper)
	e.must(t, ctx, "create", "clusterrolebinding", scraper, "--clusterrole="+release+"-metrics-reader", "--serviceaccount="+releaseNamespace+":"+scraper)
	t.Cleanup(func() {
		_, _ = e.Kubectl(context.Background(), "", "delete", "clusterrolebinding", scraper, "--ignore-not-found")
		_, _ = e.Kubectl(context.Background(), "", "-n", releaseNamespace, "delete", "serviceaccount", scraper, "--ignore-not-found")
	})
	token := strings.TrimSpace(e.must(t, ctx, "-n", releaseNamespace, "create", "token", scraper, "--duration=10m"))
	ip := strings.Fields(e.must(t, ctx, "-n", releaseNamespace, "get", "pods", "-l", webhookSelector, "-o", "jsonpath={.items[*].status.podIP}"))
	if len(ip) == 0 {
		t.Fatal("no webhook pod has an address")
	}
	// The serving certificate is checked by the webhook's own tests; here
	// what is scraped matters.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var exposition string
	if err := eventually(ctx, 60*time.Second, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(ip[0], "8080")+"/metrics", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /metrics of %s as %s: %s: %.200s", ip[0], scraper, resp.Status, body)
		}
		exposition = string(body)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	named, unserved, err := charts.UnservedMonitoringNames(exposition, "../charts/testdata/alerts/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unserved {
		t.Errorf("%s, which the webhook on the local cluster does not serve", u)
	}
	t.Logf("metrics named and served by the webhook on the local cluster: %v", named)
}
