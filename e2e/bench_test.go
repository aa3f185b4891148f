package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// BenchmarkPodStartup measures, on the cluster, the time from creating a pod
// to seeing it Ready for three kinds of otherwise identical pods, created
// one at a time and interleaved so that the cluster's drift hits each kind
// alike: no init container; a no-op init container (the redirector image
// printing its version: the kubelet's own cost of any init container); and
// a pod meshinit injects. It reports the medians and the differences; the
// goal is meshinit at most 50 ms above the no-op init container.
// MESHINIT_BENCH_PODS sets the pods per kind (default 20).
// Run it with `make bench-e2e`.
func BenchmarkPodStartup(b *testing.B) {
	perKind := 20
	if n, err := strconv.Atoi(os.Getenv("MESHINIT_BENCH_PODS")); err == nil && n > 0 {
		perKind = n
	}
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Minute)
	defer cancel()
	e := setup(b, ctx)
	e.install(b, ctx, nil)
	b.Cleanup(func() { e.uninstall(b, context.Background()) })
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	plain := e.createNamespace(b, ctx, "bench-plain", nil)
	injected := e.createNamespace(b, ctx, "bench-injected", map[string]string{injectionLabel: "enabled"})

	kinds := []struct {
		name, metric, namespace string
		init                    []corev1.Container
	}{
		{"no init container", "none", plain, nil},
		{"no-op init container", "noop", plain, []corev1.Container{{Name: "noop", Image: e.images.Redirector, Args: []string{"version"}}}},
		{"injected by meshinit", "meshinit", injected, nil},
	}
	times := make([][]time.Duration, len(kinds))
	b.ResetTimer()
	for i := range perKind {
		for k, kind := range kinds {
			d, err := startPod(ctx, client, kind.namespace, fmt.Sprintf("pod-%d-%d", k, i), e.images.TestApp, kind.init)
			if err != nil {
				b.Fatalf("%s: %v", kind.name, err)
			}
			times[k] = append(times[k], d)
		}
	}
	b.StopTimer()
	medians := make([]time.Duration, len(kinds))
	for k, kind := range kinds {
		medians[k] = median(times[k])
		b.ReportMetric(ms(medians[k]), "ms-median-"+kind.metric)
		fmt.Printf("%-22s median %7.0f ms  (min %5.0f, max %5.0f, n=%d)\n", kind.name,
			ms(medians[k]), ms(slices.Min(times[k])), ms(slices.Max(times[k])), len(times[k]))
	}
	overhead := medians[2] - medians[1]
	fmt.Printf("any init container costs      %+7.0f ms (no-op init vs none)\n", ms(medians[1]-medians[0]))
	verdict := "NOT MET"
	if overhead <= 50*time.Millisecond {
		verdict = "met"
	}
	fmt.Printf("meshinit costs                %+7.0f ms over the no-op init container (goal: at most +50 ms: %s)\n", ms(overhead), verdict)
}

// startPod creates a pod of the app image and returns the time until the API
// server reports it Ready. The pod is deleted afterwards.
func startPod(ctx context.Context, client kubernetes.Interface, ns, name, app string, init []corev1.Container) (time.Duration, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			InitContainers:                init,
			Containers: []corev1.Container{{Name: "app", Image: app,
				Args: []string{"-listen", ":8080", "-name", "app"}}},
		},
	}
	pods := client.CoreV1().Pods(ns)
	defer pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	began := time.Now()
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: created.ResourceVersion})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("watch of pod %s/%s ended", ns, name)
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && podReady(p) {
				return time.Since(began), nil
			}
		case <-timeout:
			return 0, fmt.Errorf("pod %s/%s not Ready after 2 minutes", ns, name)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
