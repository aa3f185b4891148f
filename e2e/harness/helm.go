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

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/poll"
	"github.com/meshinit/meshinit/webhook"
)

// The release the harness installs, as `helm install meshinit -n
// meshinit-system` names it.
const (
	Release          = "meshinit"
	ReleaseNamespace = "meshinit-system"
	// WebhookName is the webhook's Deployment.
	WebhookName = "meshinit-webhook"
	// WebhookSelector selects the webhook's pods.
	WebhookSelector = "app.kubernetes.io/instance=meshinit,app.kubernetes.io/component=webhook"
	// helmTimeout bounds each Helm action's wait.
	helmTimeout = 5 * time.Minute
)

// helm is Helm's action configuration for the release namespace, with the
// API server's version as the chart's .Capabilities.
func (c *Cluster) helm() (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, ns := c.Kubeconfig, ReleaseNamespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ReleaseNamespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	return cfg, nil
}

// HelmConfig is Helm's action configuration for the release namespace, as
// Install uses it, for a test that runs Helm's actions itself (the release
// test installs, upgrades and rolls back charts pulled from a registry).
func (c *Cluster) HelmConfig() (*action.Configuration, error) { return c.helm() }

// Install is `helm upgrade --install --reset-values --wait`: it installs
// the chart with vals (over its values.yaml), or upgrades the release to
// exactly those values, and waits for the webhook's rollout. Replaced
// webhook replicas keep serving the old values while they shut down (the
// chart's shutdownDelay), so it also waits until they are gone. With
// injector policy it waits until no webhook pod is left (the API server's
// policies take a moment more to be in effect: see WaitInjector).
func (c *Cluster) Install(ctx context.Context, vals map[string]any) error {
	cfg, err := c.helm()
	if err != nil {
		return err
	}
	ch, err := charts.Load()
	if err != nil {
		return err
	}
	vals = c.Values(vals)
	history := action.NewHistory(cfg)
	history.Max = 1
	switch _, err := history.Run(Release); {
	case errors.Is(err, driver.ErrReleaseNotFound):
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = Release, ReleaseNamespace, true
		in.Wait, in.Timeout = true, helmTimeout
		if _, err := in.RunWithContext(ctx, ch, vals); err != nil {
			return fmt.Errorf("helm install: %w", err)
		}
	case err != nil:
		return fmt.Errorf("helm history: %w", err)
	default:
		up := action.NewUpgrade(cfg)
		up.Namespace, up.ResetValues = ReleaseNamespace, true
		up.Wait, up.Timeout = true, helmTimeout
		if _, err := up.RunWithContext(ctx, Release, ch, vals); err != nil {
			return fmt.Errorf("helm upgrade: %w", err)
		}
	}
	return c.WaitInjecting(ctx, vals["injector"] == "policy")
}

// WaitInjecting waits, after Helm changed the release, until its injector
// injects with the release's configuration: the webhook's rollout done
// (exactly its replicas, Ready, the replaced ones gone), or with the policy
// injector (policy) no webhook pod left and the API server injecting.
func (c *Cluster) WaitInjecting(ctx context.Context, policy bool) error {
	if policy {
		// No webhook: the API server injects. A webhook of an earlier
		// install stops serving as its pods go.
		if err := c.waitNoWebhookPods(ctx); err != nil {
			return err
		}
		return c.waitInjector(ctx)
	}
	return c.waitWebhookPods(ctx)
}

// waitInjector waits until the API server injects pods with the release's
// configuration: a pod opted in by its label (in namespace default, not
// opted in), created with a server-side dry run, carries the status of the
// configuration file the release's ConfigMap holds. The API server sees
// new or changed policies a moment after they are written.
func (c *Cluster) waitInjector(ctx context.Context) error {
	// The file's exact bytes (Kubectl trims its output: a jsonpath of the
	// file would lose its last newline, and the hash with it).
	out, err := c.Kubectl(ctx, "", "-n", ReleaseNamespace, "get", "configmap", WebhookName, "-o", "json")
	if err != nil {
		return err
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &cm); err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", ReleaseNamespace, WebhookName, err)
	}
	want := webhook.Status{InitContainers: []string{RedirectName}, Config: webhook.ConfigHash([]byte(cm.Data["config.yaml"]))}.String()
	// It runs as its own UID and GID with no capabilities, so that the
	// chart's default RedirectPolicy (interception Required) admits it too.
	ownIdentity := map[string]any{"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": true, "allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}
	probe := pod("meshinit-probe", map[string]string{InjectLabel: "true"}, nil, container("app", "registry.invalid/probe:1", ownIdentity))
	err = poll.Until(ctx, time.Second, time.Minute, func(ctx context.Context) error {
		got, err := c.Kubectl(ctx, probe, "-n", "default", "create", "--dry-run=server", "-f", "-", "-o", `jsonpath={.metadata.annotations.meshinit\.io/status}`)
		if err != nil || got != want {
			return fmt.Errorf("a dry-run pod's status %q (%v), want %s", got, err, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to inject pods: %w", err)
	}
	return nil
}

// Values are the values Install installs the chart with: vals over the
// harness's own (the images, the policy values the tests are written for).
func (c *Cluster) Values(vals map[string]any) map[string]any {
	return merged(vals, merged(c.imageValues, c.policyValues))
}

// merged is vals over base, recursively, without changing either.
func merged(vals, base map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range vals {
		vm, vIsMap := v.(map[string]any)
		bm, bIsMap := out[k].(map[string]any)
		if vIsMap && bIsMap {
			out[k] = merged(vm, bm)
		} else {
			out[k] = v
		}
	}
	return out
}

// waitWebhookPods waits until the webhook has exactly as many pods as its
// Deployment wants, all Ready.
func (c *Cluster) waitWebhookPods(ctx context.Context) error {
	err := poll.Until(ctx, time.Second, 2*time.Minute, func(ctx context.Context) error {
		want, err := c.Kubectl(ctx, "", "-n", ReleaseNamespace, "get", "deployment", WebhookName, "-o", "jsonpath={.spec.replicas}")
		if err != nil {
			return err
		}
		ready, err := c.Kubectl(ctx, "", "-n", ReleaseNamespace, "get", "pods", "-l", WebhookSelector,
			"-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`)
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(want)
		if states := strings.Fields(ready); len(states) != n || strings.Contains(ready, "False") {
			return fmt.Errorf("webhook pods Ready: %q, want %d pods, all True", states, n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the webhook's pods: %w", err)
	}
	return nil
}

// waitNoWebhookPods waits until no webhook pod is left.
func (c *Cluster) waitNoWebhookPods(ctx context.Context) error {
	err := poll.Until(ctx, time.Second, 2*time.Minute, func(ctx context.Context) error {
		pods, err := c.Kubectl(ctx, "", "-n", ReleaseNamespace, "get", "pods", "-l", WebhookSelector, "-o", "name")
		if err != nil || pods != "" {
			return fmt.Errorf("webhook pods left: %q (%v)", pods, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the webhook's pods to go: %w", err)
	}
	return nil
}

// HelmTest is `helm test`: it runs the chart's test pod, which passes only
// if its connection was redirected to its proxy. On failure the error holds
// the test pod's logs.
func (c *Cluster) HelmTest(ctx context.Context) error {
	cfg, err := c.helm()
	if err != nil {
		return err
	}
	rt := action.NewReleaseTesting(cfg)
	rt.Namespace, rt.Timeout = ReleaseNamespace, 3*time.Minute
	if _, err := rt.Run(Release); err != nil {
		// The chart's test pod runs in a namespace of its own, kept on
		// failure.
		logs, _ := c.Kubectl(ctx, "", "-n", Release+"-test", "logs", Release+"-test-injection", "--all-containers")
		return fmt.Errorf("helm test: %w\ntest pod's logs:\n%s", err, logs)
	}
	return nil
}

// Uninstall is `helm uninstall --wait`; it also waits until the webhook's
// pods are gone. The chart's CRD stays, as with helm.
func (c *Cluster) Uninstall(ctx context.Context) error {
	cfg, err := c.helm()
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.Wait, un.Timeout = true, helmTimeout
	if _, err := un.Run(Release); err != nil {
		return fmt.Errorf("helm uninstall: %w", err)
	}
	_, err = c.Kubectl(ctx, "", "-n", ReleaseNamespace, "wait", "--for", "delete", "pod", "-l", WebhookSelector, "--timeout", "120s")
	if err != nil && !strings.Contains(err.Error(), "no matching resources") {
		return err
	}
	return nil
}
