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

// Command demo is `make demo`: meshinit at work on a real cluster, shown
// step by step. As root it brings up the local single-node cluster
// (e2e/cluster), builds meshinit's images as `make images` does and loads
// them into the node, installs the chart with Helm, opts a namespace in and
// shows what happened to a pod: the init container the webhook added, the
// rules it programmed in the pod's network namespace, a request arriving at
// the proxy with its original destination, and what
// `kubectl apply --dry-run=server` shows (the injected pod, a policy
// rejection). The cluster stays up for kubectl; `make demo-down` removes it.
// Running it again reuses the cluster and starts the demo's pods afresh.
//
// -injector policy (make demo INJECTOR=policy) installs the chart with
// injector: policy: the API server injects the pod itself, with no webhook.
//
// MESHINIT_CLUSTER=existing (make demo CLUSTER=existing) runs it on the
// cluster KUBECONFIG names instead (see harness.Choose): it says first which
// cluster that is and what it will create there, and waits a moment for a
// Ctrl-C. The images go to MESHINIT_E2E_REGISTRY, which that cluster must be
// able to pull from, or through a node's containerd socket.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/meshinit/meshinit/e2e/cluster"
	"github.com/meshinit/meshinit/e2e/harness"
	"github.com/meshinit/meshinit/internal/poll"
)

// The demo's namespaces: the app's, opted in, and the client's, not.
const (
	appNS    = "demo"
	clientNS = "demo-client"
)

var began = time.Now()

// existingPause is how long the demo waits, on an existing cluster, after
// saying what it will create there and before it does.
const existingPause = 10 * time.Second

func main() {
	injector := flag.String("injector", "webhook", "the chart's injector: webhook, or policy (a MutatingAdmissionPolicy, no webhook)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *injector); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		var unavailable *harness.Unavailable
		if !errors.As(err, &unavailable) && !errors.Is(err, errStopped) {
			fmt.Fprintln(os.Stderr, "The cluster is left as it is for a look; "+removal())
		}
		os.Exit(1)
	}
}

// step prints a progress line: the time since the start and what comes.
func step(format string, args ...any) {
	fmt.Printf("\n[%6.1fs] ==> %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

// detail prints progress inside a step, indented.
func detail(format string, args ...any) {
	fmt.Printf("[%6.1fs]     %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

// show prints a command a person could type and its output, indented.
func show(command, output string) {
	fmt.Printf("    $ %s\n", command)
	for line := range strings.SplitSeq(strings.TrimRight(output, "\n"), "\n") {
		fmt.Printf("      %s\n", line)
	}
}

// demoCreates is what the demo creates on a cluster, and leaves there.
var demoCreates = []string{
	"the Helm release " + harness.Release + " in namespace " + harness.ReleaseNamespace + " (created), with its cluster-wide objects " +
		"(the RedirectPolicy CRD, mutating and validating webhook and admission policy configurations, ClusterRoles and bindings); an existing release of that name is upgraded to the demo's values",
	"the chart's helm test pod, in namespace " + harness.Release + "-test",
	"namespaces " + appNS + " (labelled " + harness.InjectionLabel + "=enabled) and " + clientNS + ", deleted first if they exist, with pods app and client and RedirectPolicy " + appNS + "/require-8080",
	"the images redirector, webhook, test-app and test-proxy, pushed to MESHINIT_E2E_REGISTRY or loaded into the node's containerd",
	"all of it stays when the demo ends, for a look",
}

// errStopped is a Ctrl-C before the demo created anything.
var errStopped = errors.New("stopped before anything was created")

// existing says whether the demo runs on an existing cluster.
var existing = os.Getenv(harness.ClusterEnv) == harness.ClusterExisting

// removal says how to remove what the demo left.
func removal() string {
	if existing {
		return fmt.Sprintf("remove what the demo created with `kubectl delete namespace %s %s` and `helm uninstall %s -n %s`",
			appNS, clientNS, harness.Release, harness.ReleaseNamespace)
	}
	return "`make demo-down` removes the local cluster"
}

func run(ctx context.Context, injector string) error {
	if existing {
		fmt.Printf("meshinit demo: meshinit's chart on an existing cluster, and a pod whose TCP traffic goes through a proxy.\n")
		step("Using the cluster KUBECONFIG names (CLUSTER=existing)")
	} else {
		fmt.Printf("meshinit demo: a local Kubernetes %s cluster, meshinit's chart, and a pod whose TCP traffic goes through a proxy.\n", cluster.KubernetesVersion)
		step("Bringing up the local single-node cluster (etcd, kube-apiserver, controller-manager, scheduler, kube-proxy, kubelet, containerd)")
	}
	c, err := harness.Choose(ctx, detail, "the demo", demoCreates)
	if err != nil {
		return err
	}
	if existing {
		detail("starting in %s: Ctrl-C now stops it, with nothing created", existingPause)
		select {
		case <-ctx.Done():
			return errStopped
		case <-time.After(existingPause):
		}
	}
	detail("cluster ready: KUBECONFIG=%s", c.Kubeconfig)
	kubectl := func(stdin string, args ...string) (string, error) { return c.Kubectl(ctx, stdin, args...) }

	where := "loading them into the node's containerd"
	if c.Registry != "" {
		where = "pushing them to " + c.Registry
	}
	step("Building meshinit's images as `make images` does (redirector, webhook, test-app, test-proxy) and %s", where)
	dir, err := os.MkdirTemp("", "meshinit-demo-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	imgs, err := c.LoadImages(ctx, dir, detail)
	if err != nil {
		return err
	}

	if injector == "policy" {
		step("Installing the chart with injector=policy: helm upgrade --install meshinit charts/meshinit -n %s --create-namespace --set injector=policy --wait", harness.ReleaseNamespace)
		if err := c.Install(ctx, map[string]any{"injector": injector}); err != nil {
			return err
		}
		out, _ := kubectl("", "get", "mutatingadmissionpolicy,validatingadmissionpolicy", "-l", "app.kubernetes.io/instance="+harness.Release)
		show("kubectl get mutatingadmissionpolicy,validatingadmissionpolicy -l app.kubernetes.io/instance="+harness.Release, out)
		detail("no webhook Deployment, Service or certificates: the API server injects pods itself")
	} else {
		step("Installing the chart with its default values: helm upgrade --install meshinit charts/meshinit -n %s --create-namespace --wait", harness.ReleaseNamespace)
		if err := c.Install(ctx, nil); err != nil {
			return err
		}
		out, _ := kubectl("", "-n", harness.ReleaseNamespace, "get", "pods", "-l", harness.WebhookSelector)
		show("kubectl -n "+harness.ReleaseNamespace+" get pods -l app.kubernetes.io/component=webhook", out)
	}
	// Who injects, for the steps' titles.
	injectorName := map[string]string{"webhook": "The webhook", "policy": "The API server (MutatingAdmissionPolicy " + harness.Release + "-inject)"}[injector]

	step("helm test meshinit -n %s: the chart's own check, a pod in an opted-in namespace whose connection must reach its proxy", harness.ReleaseNamespace)
	if err := c.HelmTest(ctx); err != nil {
		return err
	}
	detail("passed")

	step("Opting namespace %s in (label %s=enabled); %s is left alone", appNS, harness.InjectionLabel, clientNS)
	if _, err := kubectl("", "delete", "namespace", appNS, clientNS, "--ignore-not-found", "--wait", "--timeout", "120s"); err != nil {
		return err
	}
	for ns, labels := range map[string]map[string]string{appNS: {harness.InjectionLabel: "enabled"}, clientNS: nil} {
		if _, err := c.Apply(ctx, harness.Namespace(ns, labels)); err != nil {
			return err
		}
	}
	fmt.Printf("    $ kubectl create namespace %s && kubectl label namespace %s %s=enabled\n", appNS, appNS, harness.InjectionLabel)

	step("Creating pod %s/app: the test app on :8080 and :8081, the test proxy as UID 1337 on 15001 (outbound) and 15006 (inbound); port 8081 excluded by annotation", appNS)
	if _, err := kubectl(imgs.AppPod("app", nil, map[string]string{harness.ExcludeInbound: "8081"}), "-n", appNS, "create", "-f", "-"); err != nil {
		return err
	}
	if _, err := kubectl(imgs.PlainPod("client", nil, nil), "-n", clientNS, "create", "-f", "-"); err != nil {
		return err
	}
	appIP, err := c.WaitReady(ctx, appNS, "app")
	if err != nil {
		return err
	}
	clientIP, err := c.WaitReady(ctx, clientNS, "client")
	if err != nil {
		return err
	}
	detail("pod %s/app is Ready at %s; pod %s/client at %s", appNS, appIP, clientNS, clientIP)

	step("%s added the init container %s; it ran to completion before the app started", injectorName, harness.RedirectName)
	out, err := kubectl("", "-n", appNS, "get", "pod", "app", "-o",
		`jsonpath={range .spec.initContainers[*]}{.name}{"\n  image: "}{.image}{"\n  args:  "}{.args}{"\n  securityContext: "}{.securityContext}{"\n"}{end}`)
	if err != nil {
		return err
	}
	show("kubectl -n "+appNS+" get pod app -o jsonpath='{.spec.initContainers[*]}'", out)
	out, _ = kubectl("", "-n", appNS, "get", "pod", "app", "-o",
		`jsonpath={.status.initContainerStatuses[0].state.terminated.reason} (exit code {.status.initContainerStatuses[0].state.terminated.exitCode})`)
	show("kubectl -n "+appNS+" get pod app -o jsonpath='{.status.initContainerStatuses[0].state.terminated}'", out)
	out, _ = kubectl("", "-n", appNS, "logs", "app", "-c", harness.RedirectName)
	show("kubectl -n "+appNS+" logs app -c "+harness.RedirectName, out)

	step("What it programmed for each IP family, from its termination message")
	out, _ = kubectl("", "-n", appNS, "get", "pod", "app", "-o", `jsonpath={.status.initContainerStatuses[0].state.terminated.message}`)
	show("kubectl -n "+appNS+" get pod app -o jsonpath='{.status.initContainerStatuses[0].state.terminated.message}'", out)

	if c.IsLocal() {
		step("The rules it programmed in the pod's network namespace, read from the node")
		rules, err := c.NATRules(ctx, appNS, "app")
		if err != nil {
			return err
		}
		var meshinit []string
		for line := range strings.SplitSeq(rules, "\n") {
			if strings.Contains(line, "MESHINIT") {
				meshinit = append(meshinit, line)
			}
		}
		show("nsenter --net=/proc/<app's pid>/ns/net iptables-save -t nat | grep MESHINIT", strings.Join(meshinit, "\n"))
	}

	step("Traffic: connections answered by the test servers, which name themselves and the original destination they read with SO_ORIGINAL_DST")
	for _, d := range []struct{ ns, pod, container, addr, what string }{
		{clientNS, "client", "client", appIP + ":8080", "inbound to the app's port 8080: the inbound proxy answers, with the original destination"},
		{clientNS, "client", "client", appIP + ":8081", "inbound to 8081, excluded by annotation: the app itself answers"},
		{appNS, "app", "app", clientIP + ":8080", "outbound from the app: the outbound proxy answers, with where the app was going"},
		{appNS, "app", "proxy-out", clientIP + ":8080", "outbound from the proxy's own UID 1337: not redirected, the client answers"},
	} {
		line, err := c.Dial(ctx, d.ns, d.pod, d.container, d.addr)
		if err != nil {
			return err
		}
		fmt.Printf("    # %s\n", d.what)
		show(fmt.Sprintf("kubectl -n %s exec %s -c %s -- testserver -dial %s", d.ns, d.pod, d.container, d.addr), line)
	}

	step("kubectl apply --dry-run=server: the API server runs the injector and the policy and stores nothing")
	out, err = kubectl(imgs.PlainPod("preview", nil, nil), "-n", appNS, "apply", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.initContainers[*].name}")
	if err != nil {
		return err
	}
	fmt.Println("    # a new pod in the opted-in namespace would get:")
	show("kubectl -n "+appNS+" apply --dry-run=server -f pod.yaml -o jsonpath='{.spec.initContainers[*].name}'", out)
	if _, err := c.Apply(ctx, harness.RequiredInboundPortPolicy(appNS, "require-8080", 8080)); err != nil {
		return err
	}
	fmt.Printf("    # RedirectPolicy %s/require-8080 requires inbound port 8080 to be intercepted; a Deployment excluding 8000-8090:\n", appNS)
	deployment := imgs.Deployment(appNS, "excludes-8080", map[string]string{harness.ExcludeInbound: "8000-8090"})
	// The API server's policy informer sees a new RedirectPolicy after a
	// moment.
	var rejection error
	if err := poll.Until(ctx, time.Second, time.Minute, func(context.Context) error {
		if _, rejection = kubectl(deployment, "apply", "--dry-run=server", "-f", "-"); rejection == nil {
			return errors.New("the policy admitted a Deployment excluding the required port 8080")
		}
		return nil
	}); err != nil {
		return err
	}
	msg := rejection.Error()
	if i := strings.Index(msg, "Error from server"); i >= 0 {
		msg = msg[i:] // what kubectl prints
	}
	show("kubectl apply --dry-run=server -f deployment.yaml", msg)

	if existing {
		fmt.Printf(`
[%6.1fs] Done. What the demo created stays on the cluster KUBECONFIG=%s names:
    kubectl -n %s describe pod app
    kubectl -n %s logs app -c proxy-in
Remove it: %s.
`, time.Since(began).Seconds(), c.Kubeconfig, appNS, appNS, removal())
		return nil
	}
	bin := filepath.Dir(c.KubectlBin)
	fmt.Printf(`
[%6.1fs] Done. The cluster keeps running; use it with:
    export KUBECONFIG=%s PATH=%s:$PATH
    kubectl get pods -A
    kubectl -n %s describe pod app
    kubectl -n %s logs app -c proxy-in
Take it down (stops every component, removes its state and rules):
    make demo-down
`, time.Since(began).Seconds(), c.Kubeconfig, bin, appNS, appNS)
	return nil
}
