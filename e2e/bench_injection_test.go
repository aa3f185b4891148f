package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// injectionRate is how many pod creates per second BenchmarkInjection sends,
// in turn to each of its namespaces.
const injectionRate = 30

// BenchmarkInjection measures what injection adds to a pod create in the API
// server: server-side dry-run creates of one small pod, at a fixed rate
// (injectionRate a second, whatever the answers take), in turn into three
// namespaces in one run, so that the cluster's drift hits each alike: one
// not opted in (the baseline: admission with nothing of meshinit to do but
// the RedirectPolicy's policy, as in the others), one the webhook injects
// (the chart's default injector, its two replicas) and one the policy
// injector injects (the chart's MutatingAdmissionPolicy and
// ValidatingAdmissionPolicies, scoped to that namespace; the webhook's
// configuration is scoped away from it). It prints p50 and p99 of each, and
// their differences from the baseline; the goal for the policy injector is
// under +0.5 ms at p50. MESHINIT_BENCH_CREATES sets the creates per
// namespace (default 600: 60 s). Run it with `make bench-injection`.
func BenchmarkInjection(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Minute)
	defer cancel()
	e, cfg, perNS := benchSetup(b, ctx, "MESHINIT_BENCH_CREATES", 600)
	cfg.QPS, cfg.Burst = 10*injectionRate, 10*injectionRate // no client-side throttling
	client := kubernetes.NewForConfigOrDie(cfg)
	namespaces := []struct{ name, ns string }{
		{"not opted in", e.createNamespace(b, ctx, "bench-plain", nil)},
		{"webhook", e.createNamespace(b, ctx, "bench-webhook", map[string]string{injectionLabel: "enabled"})},
		{"policy", e.createNamespace(b, ctx, "bench-policy", map[string]string{injectionLabel: "enabled"})},
	}
	policyNS := namespaces[2].ns

	// The webhook leaves the policy's namespace alone.
	var mwc map[string]any
	if err := json.Unmarshal([]byte(e.must(b, ctx, "get", "mutatingwebhookconfiguration", release, "-o", "json")), &mwc); err != nil {
		b.Fatal(err)
	}
	var patch []map[string]any
	for i := range mwc["webhooks"].([]any) {
		patch = append(patch, map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/namespaceSelector/matchExpressions/-", i),
			"value": map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []string{policyNS}}})
	}
	p, _ := json.Marshal(patch)
	e.must(b, ctx, "patch", "mutatingwebhookconfiguration", release, "--type=json", "-p", string(p))
	// The policy injector, for that namespace alone, beside the release.
	objs, err := charts.Objects(charts.Options{Namespace: releaseNamespace, Values: e.Values(map[string]any{"injector": "policy"}),
		APIVersions: []string{"admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	var policies []string
	for _, o := range objs {
		if !strings.HasPrefix(o.GetName(), release+"-inject") {
			continue
		}
		policies = append(policies, benchScoped(b, o, policyNS))
	}
	e.apply(b, ctx, strings.Join(policies, "\n---\n"))
	b.Cleanup(func() {
		_, _ = e.Kubectl(context.Background(), strings.Join(policies, "\n---\n"), "delete", "--ignore-not-found", "-f", "-")
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: e.images.TestApp}}},
	}
	create := func(ctx context.Context, ns string) (time.Duration, *corev1.Pod, error) {
		began := time.Now()
		out, err := client.CoreV1().Pods(ns).Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return time.Since(began), out, err
	}
	// Each namespace as it must be: the first not injected, the others
	// injected by their injector (the policies a moment after they are
	// written), and a few creates each to warm up.
	for i, n := range namespaces {
		if err := eventually(ctx, 60*time.Second, func() error {
			_, out, err := create(ctx, n.ns)
			if err != nil {
				return err
			}
			if injected := out.Annotations[webhook.StatusAnnotation] != ""; injected != (i > 0) {
				return fmt.Errorf("namespace %s (%s): injected %v", n.ns, n.name, injected)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		for range 20 {
			if _, _, err := create(ctx, n.ns); err != nil {
				b.Fatal(err)
			}
		}
	}

	times := make([][]time.Duration, len(namespaces))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed []error
	tick := time.NewTicker(time.Second / injectionRate)
	defer tick.Stop()
	b.ResetTimer()
	for i := range perNS * len(namespaces) {
		<-tick.C
		k := i % len(namespaces)
		wg.Go(func() {
			d, _, err := create(ctx, namespaces[k].ns)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			times[k] = append(times[k], d)
		})
	}
	wg.Wait()
	b.StopTimer()
	if len(failed) > 0 {
		b.Fatalf("%d creates failed, the first: %v", len(failed), failed[0])
	}
	fmt.Printf("%d server-side dry-run pod creates at %d/s, in turn into each namespace:\n", perNS*len(namespaces), injectionRate)
	var base [2]time.Duration
	for k, n := range namespaces {
		p50, p99 := percentile(times[k], 50), percentile(times[k], 99)
		if k == 0 {
			base = [2]time.Duration{p50, p99}
		}
		b.ReportMetric(ms(p50), "ms-p50-"+strings.ReplaceAll(n.name, " ", "-"))
		b.ReportMetric(ms(p99), "ms-p99-"+strings.ReplaceAll(n.name, " ", "-"))
		fmt.Printf("  %-13s p50 %6.2f ms  p99 %6.2f ms", n.name, ms(p50), ms(p99))
		if k > 0 {
			fmt.Printf("   %+6.2f ms p50, %+6.2f ms p99 over not opted in", ms(p50-base[0]), ms(p99-base[1]))
		}
		fmt.Println()
	}
	overhead := percentile(times[2], 50) - base[0]
	verdict := "NOT MET"
	if overhead < 500*time.Microsecond {
		verdict = "met"
	}
	fmt.Printf("the policy injector adds %+.2f ms at p50 (goal: under +0.5 ms: %s)\n", ms(overhead), verdict)
}

// benchScoped is o, one of the policy injector's objects, as JSON, renamed
// (-bench) and, when a policy, matching namespace ns alone.
func benchScoped(b *testing.B, o *unstructured.Unstructured, ns string) string {
	b.Helper()
	o = o.DeepCopy()
	o.SetName(o.GetName() + "-bench")
	if name, ok, _ := unstructured.NestedString(o.Object, "spec", "policyName"); ok {
		if err := unstructured.SetNestedField(o.Object, name+"-bench", "spec", "policyName"); err != nil {
			b.Fatal(err)
		}
	}
	if exprs, ok, _ := unstructured.NestedSlice(o.Object, "spec", "matchConstraints", "namespaceSelector", "matchExpressions"); ok {
		exprs = append(exprs, map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{ns}})
		if err := unstructured.SetNestedSlice(o.Object, exprs, "spec", "matchConstraints", "namespaceSelector", "matchExpressions"); err != nil {
			b.Fatal(err)
		}
	}
	out, err := json.Marshal(o.Object)
	if err != nil {
		b.Fatal(err)
	}
	return string(out)
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}
