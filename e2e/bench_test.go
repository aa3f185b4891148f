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
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/e2e/harness"
)

// benchSetup is what each benchmark starts with: how many of its things to
// measure, from environment variable count (def when it is not a positive
// number), the chart installed (uninstalled when b ends), and the admin's
// REST config.
func benchSetup(b *testing.B, ctx context.Context, count string, def int) (*env, *rest.Config, int) {
	n, err := strconv.Atoi(os.Getenv(count))
	if err != nil || n <= 0 {
		n = def
	}
	e := setup(b, ctx)
	e.install(b, ctx, nil)
	b.Cleanup(func() { e.uninstall(b, context.Background()) })
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	return e, cfg, n
}

// BenchmarkPodStartup measures, on the cluster, how long four kinds of
// otherwise identical pods take to start: no init container; a no-op init
// container (the redirector image printing its version: the kubelet's own
// cost of any init container); the same no-op in meshinit's shape (the init
// container meshinit injects, its securityContext and resources, running
// `version` instead of `apply`); and a pod meshinit injects. The goal is
// meshinit at most 50 ms above the no-op init container.
// MESHINIT_BENCH_PODS sets the pods per kind (default 60).
//
// Time to Ready cannot tell 50 ms apart. The kubelet notices that an init
// container finished by relisting the runtime once a second, so a pod's
// time to Ready carries a wait spread evenly over up to a second (about
// 300 ms of standard deviation, whatever the init container did). Worse,
// pods created one after another in a fixed order lock each kind onto its
// own phase of that relist, which once made meshinit's pods look 250-390 ms
// faster than no-op ones running the same image. So:
//   - each round creates the kinds in a random order, each after the previous
//     pod is gone and a random pause of up to 1.5 relist periods, and times to
//     Ready are reported as medians with a bootstrap confidence interval of
//     their differences, for what a user waits;
//   - the verdict is taken on what neither the relist nor the rest of a pod's
//     start (scheduling, the sandbox) blurs: the init container's own run,
//     from the container runtime creating it to its last line of output as
//     the runtime timestamped it (the no-op prints its only line as it exits,
//     the redirector its last once the rules are in place);
//   - each pod's start is split into the steps the container runtime
//     records (its sandbox, each container's creation, start and exit), so a
//     difference in time to Ready is found in the step it comes from, and the
//     shaped no-op splits meshinit's cost into its container's shape and its
//     work.
//
// Run it with `make bench-e2e`.
func BenchmarkPodStartup(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 40*time.Minute)
	defer cancel()
	e, cfg, perKind := benchSetup(b, ctx, "MESHINIT_BENCH_PODS", 60)
	client := kubernetes.NewForConfigOrDie(cfg)
	runtime := dialRuntime(b, e.Containerd)
	plain := e.createNamespace(b, ctx, "bench-plain", nil)
	injected := e.createNamespace(b, ctx, "bench-injected", map[string]string{injectionLabel: "enabled"})
	shaped, err := meshinitShape(ctx, client, injected, e.images.TestApp)
	if err != nil {
		b.Fatal(err)
	}

	kinds := []podKind{
		{"none", "no init container", plain, nil},
		{"no-op", "no-op init container", plain, []corev1.Container{{Name: "noop", Image: e.images.Redirector, Args: []string{"version"}}}},
		{"shaped", "no-op in meshinit's shape", plain, []corev1.Container{shaped}},
		{"meshinit", "injected by meshinit", injected, nil},
	}
	const noop, shape, meshinit = 1, 2, 3
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	timelines := make([][]timeline, len(kinds))
	b.ResetTimer()
	for i := range perKind {
		for _, k := range rng.Perm(len(kinds)) {
			kind := kinds[k]
			time.Sleep(time.Duration(rng.Int64N(int64(relistPeriod * 3 / 2))))
			t, err := startPod(ctx, client, runtime, kind.namespace, fmt.Sprintf("pod-%d-%d", k, i), e.images.TestApp, kind.init)
			if err != nil {
				b.Fatalf("%s: %v", kind.name, err)
			}
			timelines[k] = append(timelines[k], t)
		}
	}
	b.StopTimer()

	ready := durations(timelines, evCreated, evReady)
	initRun := durations(timelines, evInitCreated, evInitOutput)
	fmt.Println("created to Ready:")
	for k, kind := range kinds {
		b.ReportMetric(ms(median(ready[k])), "ms-ready-"+kind.metric)
		printMedian(kind.name, ready[k])
	}
	printDifference(rng, "any init container costs", ready[noop], ready[0], "no-op init vs none")
	printDifference(rng, "meshinit costs", ready[meshinit], ready[noop], "over the no-op init container")
	printDifference(rng, "  of which its shape", ready[shape], ready[noop], "shaped no-op over the no-op")
	printDifference(rng, "  and its work", ready[meshinit], ready[shape], "over the shaped no-op")
	fmt.Println("the init container's run, created by the runtime to its last output:")
	for k := noop; k < len(kinds); k++ {
		b.ReportMetric(ms(median(initRun[k])), "ms-init-run-"+kinds[k].metric)
		printMedian(kinds[k].name, initRun[k])
	}
	lo, hi := printDifference(rng, "meshinit costs", initRun[meshinit], initRun[noop], "over the no-op init container")
	printDifference(rng, "  of which its shape", initRun[shape], initRun[noop], "shaped no-op over the no-op")
	printDifference(rng, "  and its work", initRun[meshinit], initRun[shape], "over the shaped no-op")
	b.ReportMetric(ms(median(initRun[meshinit])-median(initRun[noop])), "ms-meshinit-over-noop")
	printSteps(rng, kinds, timelines, noop, shape, meshinit)
	fmt.Printf("goal: meshinit at most +50 ms over the no-op init container: %s\n", verdict(lo, hi, 50*time.Millisecond))
}

// podKind is one kind of pod the start-up benchmark creates: its pods'
// init containers (none, or those meshinit injects, for nil) and namespace.
type podKind struct {
	metric, name, namespace string
	init                    []corev1.Container
}

// meshinitShape is the init container meshinit injects into a pod of the
// app image in namespace ns (a server-side dry run), renamed and running
// `version` instead of `apply`: a no-op with everything else of meshinit's
// container (image, securityContext, resources).
func meshinitShape(ctx context.Context, client kubernetes.Interface, ns, app string) (corev1.Container, error) {
	dry, err := client.CoreV1().Pods(ns).Create(ctx, benchPod("shape", app, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return corev1.Container{}, fmt.Errorf("dry-run create in %s: %w", ns, err)
	}
	for _, c := range dry.Spec.InitContainers {
		if c.Name == harness.RedirectName {
			c.Name, c.Command, c.Args = "shaped", nil, []string{"version"}
			return c, nil
		}
	}
	return corev1.Container{}, fmt.Errorf("dry-run create in %s: no init container %s was injected", ns, harness.RedirectName)
}

func benchPod(name, app string, init []corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			InitContainers:                init,
			Containers: []corev1.Container{{Name: "app", Image: app,
				Args: []string{"-listen", ":8080", "-name", "app"}}},
		},
	}
}

func printMedian(name string, ds []time.Duration) {
	fmt.Printf("  %-26s median %7.0f ms  (min %5.0f, max %5.0f, n=%d)\n", name, ms(median(ds)), ms(slices.Min(ds)), ms(slices.Max(ds)), len(ds))
}

// printDifference prints median(a) - median(b) with its 95% interval, and
// returns the interval.
func printDifference(rng *rand.Rand, what string, a, b []time.Duration, than string) (lo, hi time.Duration) {
	lo, hi = medianDifferenceInterval(rng, a, b)
	fmt.Printf("  %-26s %+7.0f ms %s (95%% interval %+.0f to %+.0f ms)\n", what, ms(median(a)-median(b)), than, ms(lo), ms(hi))
	return lo, hi
}

// printSteps prints, for each step of a pod's start, its median in each
// kind, and what meshinit's container shape (shaped no-op over no-op) and
// its work (meshinit over shaped no-op) add to it, with 95% intervals.
func printSteps(rng *rand.Rand, kinds []podKind, timelines [][]timeline, noop, shape, meshinit int) {
	fmt.Println("each step of a pod's start, median ms (the container runtime's record; created and Ready as the test saw them):")
	fmt.Printf("  %-34s", "step")
	for _, k := range kinds {
		fmt.Printf(" %8s", k.metric)
	}
	fmt.Printf("  %-20s %-20s\n", "shape (95%)", "work (95%)")
	all, byStep := stepDurations(timelines)
	for _, s := range all {
		ds := byStep[s]
		fmt.Printf("  %-34s", s.from+" -> "+s.to)
		for k := range kinds {
			if len(ds[k]) == 0 {
				fmt.Printf(" %8s", "")
				continue
			}
			fmt.Printf(" %8.0f", ms(median(ds[k])))
		}
		for _, pair := range [][2]int{{shape, noop}, {meshinit, shape}} {
			a, b := ds[pair[0]], ds[pair[1]]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			lo, hi := medianDifferenceInterval(rng, a, b)
			fmt.Printf("  %-20s", fmt.Sprintf("%+.0f (%+.0f..%+.0f)", ms(median(a)-median(b)), ms(lo), ms(hi)))
		}
		fmt.Println()
	}
}

// relistPeriod is how often the kubelet's generic PLEG relists the
// container runtime (pkg/kubelet/pleg: 1 s).
const relistPeriod = time.Second

// medianDifferenceInterval is a 95% percentile-bootstrap interval of
// median(a) - median(b): both samples are resampled with replacement, 4,000
// times.
func medianDifferenceInterval(rng *rand.Rand, a, b []time.Duration) (lo, hi time.Duration) {
	const rounds = 4000
	diffs := make([]time.Duration, rounds)
	resample := func(s []time.Duration) []time.Duration {
		r := make([]time.Duration, len(s))
		for i := range r {
			r[i] = s[rng.IntN(len(s))]
		}
		return r
	}
	for i := range diffs {
		diffs[i] = median(resample(a)) - median(resample(b))
	}
	slices.Sort(diffs)
	return diffs[rounds*25/1000], diffs[rounds*975/1000-1]
}

// verdict says whether an interval of the cost is within goal.
func verdict(lo, hi, goal time.Duration) string {
	switch {
	case hi <= goal:
		return "met"
	case lo > goal:
		return "NOT MET"
	}
	return "undecided at this many pods (MESHINIT_BENCH_PODS)"
}

// The events of a pod's start, in the order they happen.
const (
	evCreated     = "created"
	evSandbox     = "sandbox"
	evInitCreated = "init created"
	evInitStarted = "init started"
	evInitOutput  = "init's last output"
	evInitExited  = "init exited"
	evAppCreated  = "app created"
	evAppStarted  = "app started"
	evReady       = "Ready"
)

var eventOrder = []string{evCreated, evSandbox, evInitCreated, evInitStarted, evInitOutput, evInitExited, evAppCreated, evAppStarted, evReady}

// timeline is when each event of one pod's start happened: created (the
// create call) and Ready (seen in the watch) by the test's clock, the rest
// by the container runtime's record, on the same machine's clock. Events
// are in eventOrder; a pod without an init container has none of init's.
type timeline []event

type event struct {
	name string
	at   time.Time
}

// step is two events that follow each other in some pod's timeline.
type step struct{ from, to string }

// stepDurations are the steps of every timeline, in eventOrder, and for each
// the time it took in each kind's pods that went from one event straight to
// the other (a pod with an init container has no step sandbox -> app
// created).
func stepDurations(timelines [][]timeline) ([]step, map[step][][]time.Duration) {
	byStep := map[step][][]time.Duration{}
	for k, ts := range timelines {
		for _, t := range ts {
			for i := 1; i < len(t); i++ {
				s := step{t[i-1].name, t[i].name}
				if byStep[s] == nil {
					byStep[s] = make([][]time.Duration, len(timelines))
				}
				byStep[s][k] = append(byStep[s][k], t[i].at.Sub(t[i-1].at))
			}
		}
	}
	index := func(name string) int { return slices.Index(eventOrder, name) }
	all := slices.SortedFunc(maps.Keys(byStep), func(a, b step) int {
		if c := index(a.from) - index(b.from); c != 0 {
			return c
		}
		return index(a.to) - index(b.to)
	})
	return all, byStep
}

// durations is, for each kind, the time from event from to event to in each
// of its pods that had both.
func durations(timelines [][]timeline, from, to string) [][]time.Duration {
	ds := make([][]time.Duration, len(timelines))
	for k, ts := range timelines {
		for _, t := range ts {
			a, b := t.at(from), t.at(to)
			if !a.IsZero() && !b.IsZero() {
				ds[k] = append(ds[k], b.Sub(a))
			}
		}
	}
	return ds
}

func (t timeline) at(name string) time.Time {
	for _, e := range t {
		if e.name == name {
			return e.at
		}
	}
	return time.Time{}
}

// dialRuntime connects to the node's container runtime (CRI) at socket,
// until t ends.
func dialRuntime(t testing.TB, socket string) runtimeapi.RuntimeServiceClient {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("container runtime at %s: %v", socket, err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// startPod creates a pod of the app image and records its timeline. It then
// deletes the pod with a grace period, so the object is gone only once the
// kubelet has stopped its containers, and returns then: tearing one pod down
// does not slow the next.
func startPod(ctx context.Context, client kubernetes.Interface, runtime runtimeapi.RuntimeServiceClient, ns, name, app string, init []corev1.Container) (timeline, error) {
	pods := client.CoreV1().Pods(ns)
	began := time.Now()
	created, err := pods.Create(ctx, benchPod(name, app, init), metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: created.ResourceVersion})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	timeout := time.After(2 * time.Minute)
	var t timeline
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, fmt.Errorf("watch of pod %s/%s ended", ns, name)
			}
			if ev.Type == watch.Deleted {
				return t, nil
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || t != nil || !podReady(p) {
				continue
			}
			if t, err = podTimeline(ctx, runtime, pods, p, began, time.Now()); err != nil {
				return nil, err
			}
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return nil, err
			}
		case <-timeout:
			return nil, fmt.Errorf("pod %s/%s not Ready and gone after 2 minutes", ns, name)
		}
	}
}

// podTimeline reads the runtime's record of a Ready pod p, created at
// created and seen Ready at ready: its sandbox's creation, its first init
// container's creation, start, last line of output (kubectl logs
// --timestamps) and exit, and its first container's creation and start.
func podTimeline(ctx context.Context, runtime runtimeapi.RuntimeServiceClient, pods typedcorev1.PodInterface, p *corev1.Pod, created, ready time.Time) (timeline, error) {
	sandboxes, err := runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)}}})
	if err != nil || len(sandboxes.Items) != 1 {
		return nil, fmt.Errorf("pod %s: the runtime's sandboxes of it: %d, %v", p.Name, len(sandboxes.GetItems()), err)
	}
	t := timeline{{evCreated, created}, {evSandbox, time.Unix(0, sandboxes.Items[0].CreatedAt)}}
	if len(p.Status.InitContainerStatuses) > 0 {
		status := p.Status.InitContainerStatuses[0]
		c, err := containerStatus(ctx, runtime, p, status)
		if err != nil {
			return nil, err
		}
		out, err := pods.GetLogs(p.Name, &corev1.PodLogOptions{Container: status.Name, Timestamps: true}).DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("logs of %s in pod %s: %w", status.Name, p.Name, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		stamp, _, _ := strings.Cut(lines[len(lines)-1], " ")
		last, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return nil, fmt.Errorf("logs of %s in pod %s: no timestamped line: %q", status.Name, p.Name, lines[len(lines)-1])
		}
		t = append(t, event{evInitCreated, time.Unix(0, c.CreatedAt)}, event{evInitStarted, time.Unix(0, c.StartedAt)},
			event{evInitOutput, last}, event{evInitExited, time.Unix(0, c.FinishedAt)})
	}
	app, err := containerStatus(ctx, runtime, p, p.Status.ContainerStatuses[0])
	if err != nil {
		return nil, err
	}
	return append(t, event{evAppCreated, time.Unix(0, app.CreatedAt)}, event{evAppStarted, time.Unix(0, app.StartedAt)}, event{evReady, ready}), nil
}

// containerStatus is the runtime's status of one of pod p's containers.
func containerStatus(ctx context.Context, runtime runtimeapi.RuntimeServiceClient, p *corev1.Pod, status corev1.ContainerStatus) (*runtimeapi.ContainerStatus, error) {
	id, ok := strings.CutPrefix(status.ContainerID, "containerd://")
	if !ok {
		return nil, fmt.Errorf("container %s of pod %s: container ID %q is not containerd's", status.Name, p.Name, status.ContainerID)
	}
	resp, err := runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("container %s of pod %s: the runtime's status: %w", status.Name, p.Name, err)
	}
	return resp.Status, nil
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
