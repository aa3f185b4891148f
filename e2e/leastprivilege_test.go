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
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLeastPrivilege: on a real node (kubelet, containerd, runc), the init
// container the webhook injects runs as 65532:0 with a read-only root file
// system, RuntimeDefault seccomp, no_new_privs and only NET_ADMIN and
// NET_RAW, and programs the pod on both iptables backends: its log says
// who it ran as and which backend, the pod's nat table holds meshinit's
// rules, and real connections reach the proxy in both directions.
func TestLeastPrivilege(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	img := e.images
	installed := false
	t.Cleanup(func() {
		if installed {
			e.uninstall(t, context.Background())
		}
	})
	plain := e.createNamespace(t, ctx, "e2e-lp-plain", nil)
	e.apply(t, ctx, img.PlainPod("client", nil, nil), "-n", plain)
	clientIP := e.ready(t, ctx, plain, "client")

	for _, mode := range []string{"nft", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			installed = true
			e.install(t, ctx, map[string]any{"inject": map[string]any{
				"redirect": map[string]any{"iptables-mode": mode},
			}})
			ns := e.createNamespace(t, ctx, "e2e-lp-"+mode, map[string]string{injectionLabel: "enabled"})
			// Until the rollout has reached the API server, a review may go
			// to a replica with the old values.
			if err := eventually(ctx, 90*time.Second, func() error {
				args, err := e.Kubectl(ctx, img.AppPod("app", nil, nil), "-n", ns, "create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.initContainers[0].args}")
				if err != nil || !strings.Contains(args, "--iptables-mode="+mode) {
					return fmt.Errorf("dry-run pod's %s args %s (%v), want --iptables-mode=%s", redirectName, args, err, mode)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			e.apply(t, ctx, img.AppPod("app", nil, nil), "-n", ns)
			appIP := e.ready(t, ctx, ns, "app")

			sc := func(field string) string {
				return e.must(t, ctx, "-n", ns, "get", "pod", "app", "-o", `jsonpath={.spec.initContainers[?(@.name=="`+redirectName+`")].securityContext.`+field+`}`)
			}
			for field, want := range map[string]string{
				"runAsUser": "65532", "runAsGroup": "0", "runAsNonRoot": "true", "readOnlyRootFilesystem": "true",
				"allowPrivilegeEscalation": "false", "seccompProfile.type": "RuntimeDefault",
				"capabilities.drop": `["ALL"]`, "capabilities.add": `["NET_ADMIN","NET_RAW"]`,
			} {
				if got := sc(field); got != want {
					t.Errorf("securityContext.%s = %s, want %s", field, got, want)
				}
			}
			logs := e.must(t, ctx, "-n", ns, "logs", "app", "-c", redirectName)
			for _, want := range []string{`uid=65532 gid=0 "capabilities for iptables"="[NET_ADMIN NET_RAW]"`, "backend=" + mode, "apply done"} {
				if !strings.Contains(logs, want) {
					t.Errorf("%s log lacks %q:\n%s", redirectName, want, logs)
				}
			}
			if rules, err := e.NATRules(ctx, ns, "app"); err != nil {
				t.Error(err)
			} else if nft := strings.Contains(rules, "(nf_tables)"); nft != (mode == "nft") || !strings.Contains(rules, "-j MESHINIT_OUTPUT") {
				t.Errorf("the pod's %s nat table lacks meshinit's rules:\n%s", mode, rules)
			}
			if got, want := e.dial(t, ctx, plain, "client", "client", appIP+":8080"), "proxy-in orig="+appIP+":8080"; got != want {
				t.Errorf("inbound to the app answered %q, want %q", got, want)
			}
			if got, want := e.dial(t, ctx, ns, "app", "app", clientIP+":8080"), "proxy-out orig="+clientIP+":8080"; got != want {
				t.Errorf("outbound from the app answered %q, want %q", got, want)
			}
		})
	}
}
