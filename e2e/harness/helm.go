package harness

import (
	"context"
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

// Install is `helm upgrade --install --reset-values --wait`: it installs
// the chart with vals (over its values.yaml), or upgrades the release to
// exactly those values, and waits for the webhook's rollout. Replaced
// webhook replicas keep serving the old values while they shut down (the
// chart's shutdownDelay), so it also waits until they are gone.
func (c *Cluster) Install(ctx context.Context, vals map[string]any) error {
	cfg, err := c.helm()
	if err != nil {
		return err
	}
	ch, err := charts.Load()
	if err != nil {
		return err
	}
	vals = merged(vals, merged(c.imageValues, c.policyValues))
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
	return c.waitWebhookPods(ctx)
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
