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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meshinit/meshinit/kubectlplugin"
)

// TestKubectlMeshinitDataPlane: check --pre passes on the local cluster
// before meshinit is installed. Then, on a real kubelet, a pod whose
// meshinit-redirect keeps failing is found by `kubectl meshinit pods` and
// `check` as failing (MI1107), not current, with the redirector's own
// termination message, and its second redirector (MI1109). The pod has an
// istio-init of its own that writes a NAT rule before meshinit's runs
// (placement last): the redirector refuses to apply over another owner's
// rule, exits 1, and the kubelet restarts it into Init:CrashLoopBackOff.
// The chart is installed without its default RedirectPolicy, which would
// refuse a NET_ADMIN container in an opted-in namespace.
func TestKubectlMeshinitDataPlane(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	// Before installing: check --pre passes on the local cluster, for both
	// injectors.
	for _, injector := range []string{"webhook", "policy"} {
		if out, code := runPlugin(t, ctx, e.Kubeconfig, "check", "--pre", "--injector", injector); code != 0 || !strings.Contains(out, "helm install can go ahead") {
			t.Errorf("check --pre --injector %s: exit %d, want 0 and no problems", injector, code)
		}
	}
	t.Cleanup(func() { e.uninstall(t, context.Background()) })
	e.install(t, ctx, map[string]any{
		"inject": map[string]any{"placement": "last"},
		"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"enabled": false}},
	})
	ns := e.createNamespace(t, ctx, "e2e-dataplane", map[string]string{injectionLabel: "enabled"})
	// istio-init as its injector writes it, in spirit: a redirect of all
	// outbound TCP in nat OUTPUT, with the iptables the redirector image
	// ships, as root with NET_ADMIN.
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "two-redirectors", "namespace": ns},
		"spec": map[string]any{
			"terminationGracePeriodSeconds": 1,
			"initContainers": []any{map[string]any{
				"name": "istio-init", "image": e.images.Redirector, "imagePullPolicy": "IfNotPresent",
				"command": []any{"/usr/sbin/iptables-nft", "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-j", "REDIRECT", "--to-ports", "16001"},
				"securityContext": map[string]any{"runAsUser": 0, "runAsNonRoot": false,
					"capabilities": map[string]any{"add": []any{"NET_ADMIN", "NET_RAW"}, "drop": []any{"ALL"}}},
			}},
			"containers": []any{map[string]any{
				"name": "app", "image": e.images.TestApp, "imagePullPolicy": "IfNotPresent", "args": []any{"-listen", ":8080"},
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
			}},
		},
	}
	manifest, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(t, ctx, string(manifest))
	if inits := e.initContainers(t, ctx, ns, "two-redirectors"); len(inits) != 2 || inits[1] != redirectName {
		t.Fatalf("init containers %v, want istio-init then %s (placement last)", inits, redirectName)
	}

	plugin := func(args ...string) (string, int) { return runPlugin(t, ctx, e.Kubeconfig, args...) }
	// The kubelet takes a few restarts to back off.
	var rep kubectlplugin.PodsReport
	if err := eventually(ctx, 3*time.Minute, func() error {
		out, code := plugin("pods", "-n", ns, "-o", "json")
		if code != 1 {
			return fmt.Errorf("pods: exit %d, want 1", code)
		}
		rep = kubectlplugin.PodsReport{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return err
		}
		if len(rep.Workloads) != 1 || len(rep.Workloads[0].Pods) != 1 {
			return fmt.Errorf("want one pod: %+v", rep.Workloads)
		}
		p := rep.Workloads[0].Pods[0]
		// Crash-looping: waiting in CrashLoopBackOff, or (as the kubelet
		// also reports an init container between its restarts) terminated
		// with an error after a restart.
		looping := p.Redirect != nil && (p.Redirect.Reason == "CrashLoopBackOff" ||
			p.Redirect.State == "terminated" && p.Redirect.ExitCode != nil && *p.Redirect.ExitCode != 0 && p.Redirect.Restarts > 0)
		if p.State != kubectlplugin.StateFailing || !looping {
			return fmt.Errorf("pod %s: state %s, redirect %+v; want failing, crash-looping", p.Name, p.State, p.Redirect)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p := rep.Workloads[0].Pods[0]
	if p.Code != kubectlplugin.CodeRedirectFailing || !strings.Contains(p.Redirect.Message, "not applying") || p.Redirect.Restarts == 0 {
		t.Errorf("pod: code %s, redirect %+v; want %s, restarts, and the redirector's termination message saying it is not applying",
			p.Code, p.Redirect, kubectlplugin.CodeRedirectFailing)
	}
	codes := map[kubectlplugin.Code]bool{}
	for _, is := range p.Issues {
		codes[is.Code] = true
	}
	if !codes[kubectlplugin.CodeSecondRedirector] {
		t.Errorf("pod issues %+v: want %s (istio-init, and the rule of another owner)", p.Issues, kubectlplugin.CodeSecondRedirector)
	}
	out, code := plugin("check", "-o", "json")
	var check kubectlplugin.CheckReport
	if err := json.Unmarshal([]byte(out), &check); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range check.Findings {
		found = found || (f.Code == kubectlplugin.CodeRedirectFailing && f.Status == kubectlplugin.StatusProblem && strings.Contains(f.Detail, ns+"/pod/two-redirectors"))
	}
	if code != 1 || !found {
		t.Errorf("check: exit %d, %s found %v; want 1 and a problem naming the pod", code, kubectlplugin.CodeRedirectFailing, found)
	}
	if out, _ := plugin("pods", "-n", ns, "-o", "wide"); !strings.Contains(out, "not applying") {
		t.Errorf("pods -o wide does not show the termination message")
	}
}

// runPlugin runs kubectl meshinit with kubeconfig and args, logs what it
// printed, and returns its output and exit code.
func runPlugin(t *testing.T, ctx context.Context, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := kubectlplugin.Main(ctx, append([]string{"--kubeconfig", kubeconfig}, args...), &out, &errOut)
	t.Logf("kubectl meshinit %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String() + errOut.String(), code
}
