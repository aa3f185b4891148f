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
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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

// injectionRate is how many pod creates per second BenchmarkInjection sends.
const injectionRate = 30

// injectionPhase is one kind of pod create BenchmarkInjection times.
type injectionPhase struct {
	name string
	ns   string
	// bound is which of meshinit's admission objects are bound.
	bound boundSet
	// literal: the least an injector inside the API server and one policy
	// can cost are bound to ns for the phase (literalPolicies).
	literal bool
	// injected: the pod comes out injected.
	injected bool
	// shape: the pod sent is the webhook's injected pod (as it came out of
	// a create in the webhook phase's namespace), not the small pod.
	shape bool
	// goal is the most the phase may add to the floor's p50 (0: none).
	goal time.Duration
}

// boundSet is which of meshinit's admission objects a phase has bound.
type boundSet int

const (
	boundAll boundSet = iota
	// boundNone: the webhook configuration and every policy binding removed.
	boundNone
	// boundInjectors: the injectors only, every ValidatingAdmissionPolicy
	// binding removed.
	boundInjectors
)

// BenchmarkInjection measures what meshinit adds to a pod create in the API
// server: server-side dry-run creates of one small pod at a fixed rate
// (injectionRate a second, whatever the answers take), against the floor:
// the same creates on the same cluster with no meshinit admission object
// bound. Phases, each MESHINIT_BENCH_CREATES creates (default 300), in
// MESHINIT_BENCH_ROUNDS rounds (default 3), the order rotated each round so
// the cluster's drift hits each alike:
//
//   - floor: a namespace that is not opted in, meshinit's webhook
//     configuration and policy bindings removed;
//   - injected shape: the same, with the pod as the webhook injects it sent
//     instead (no goal: what the bigger pod itself costs the API server,
//     the part of an injection no injector can save);
//   - not governed: the same namespace with everything bound (goal: at most
//     +0.3 ms p50 over the floor);
//   - webhook: a namespace the webhook injects (the chart's two replicas;
//     goal +2.5 ms);
//   - policy: a namespace the policy injector injects (the chart's
//     MutatingAdmissionPolicy and ValidatingAdmissionPolicies scoped to it;
//     the webhook's configuration scoped away from it; goal +1.5 ms, and
//     below the webhook at p50 and p99);
//
// and, to show where an injected pod's time goes, three without a goal:
//
//   - webhook, no VAP and policy, no VAP: the same two namespaces with every
//     ValidatingAdmissionPolicy binding removed: the injector alone;
//   - literal MAP+VAP: with nothing of meshinit bound, a MutatingAdmissionPolicy
//     whose patch is the webhook's injected container, volume and annotation
//     as literals and a ValidatingAdmissionPolicy of one literal validation,
//     both bound to a namespace of their own (literalPolicies): the least an
//     injector inside the API server and one policy cost, whatever their CEL.
//
// It prints, per phase, the median over rounds of each round's p50 and p99
// with the lowest and highest round, their difference from the floor, and
// the kube-apiserver's CPU time per create (from /proc: the local cluster
// only). With MESHINIT_BENCH_PROFILE=<dir> it writes an 8 s CPU profile of
// the kube-apiserver taken during the first round of each injected phase there (go tool
// pprof -top <file>). Run it with `make bench-injection`.
func BenchmarkInjection(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 40*time.Minute)
	defer cancel()
	e, cfg, perPhase := benchSetup(b, ctx, "MESHINIT_BENCH_CREATES", 300)
	rounds, err := strconv.Atoi(os.Getenv("MESHINIT_BENCH_ROUNDS"))
	if err != nil || rounds <= 0 {
		rounds = 3
	}
	cfg.QPS, cfg.Burst = 10*injectionRate, 10*injectionRate // no client-side throttling
	client := kubernetes.NewForConfigOrDie(cfg)
	plain := e.createNamespace(b, ctx, "bench-plain", nil)
	policyNS := e.createNamespace(b, ctx, "bench-policy", map[string]string{injectionLabel: "enabled"})
	webhookNS := e.createNamespace(b, ctx, "bench-webhook", map[string]string{injectionLabel: "enabled"})
	literalNS := e.createNamespace(b, ctx, "bench-literal", nil)
	phases := []injectionPhase{
		{name: "floor", ns: plain, bound: boundNone},
		{name: "injected shape", ns: plain, bound: boundNone, injected: true, shape: true},
		{name: "not governed", ns: plain, goal: 300 * time.Microsecond},
		{name: "webhook", ns: webhookNS, injected: true, goal: 2500 * time.Microsecond},
		{name: "policy", ns: policyNS, injected: true, goal: 1500 * time.Microsecond},
		{name: "webhook, no VAP", ns: webhookNS, bound: boundInjectors, injected: true},
		{name: "policy, no VAP", ns: policyNS, bound: boundInjectors, injected: true},
		{name: "literal MAP+VAP", ns: literalNS, bound: boundNone, literal: true, injected: true},
	}
	bound := bindPolicyInjector(b, ctx, e, policyNS)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: e.images.TestApp}}},
	}
	var shaped *corev1.Pod // the webhook's injected pod, set once the webhook answers
	create := func(ctx context.Context, p injectionPhase) (time.Duration, *corev1.Pod, error) {
		in := pod
		if p.shape {
			in = shaped
		}
		began := time.Now()
		out, err := client.CoreV1().Pods(p.ns).Create(ctx, in.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return time.Since(began), out, err
	}
	// awaitState waits until every phase's namespace injects as it must
	// while phase cur runs, then warms each up with a few creates.
	awaitState := func(cur injectionPhase) {
		for _, p := range phases {
			if p.shape {
				continue
			}
			want := p.injected && (p.literal && cur.literal || !p.literal && cur.bound != boundNone)
			if err := eventually(ctx, 60*time.Second, func() error {
				_, out, err := create(ctx, p)
				if err != nil {
					return err
				}
				if injected := out.Annotations[webhook.StatusAnnotation] != ""; injected != want {
					return fmt.Errorf("namespace %s (%s): injected %v", p.ns, p.name, injected)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		// Warm up every namespace: the first reviews after a rebinding find
		// policies being compiled and connections being opened.
		for _, p := range phases {
			for range 20 {
				if _, _, err := create(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// The injected shape: the pod the webhook answers with, before the
	// first round (meshinit is bound until the floor phase unbinds it).
	for _, p := range phases {
		if p.name != "webhook" {
			continue
		}
		if err := eventually(ctx, 60*time.Second, func() error {
			_, out, err := create(ctx, p)
			if err != nil {
				return err
			}
			if out.Annotations[webhook.StatusAnnotation] == "" {
				return fmt.Errorf("namespace %s: the webhook has not injected a pod yet", p.ns)
			}
			shaped = shapeOf(out)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	apiserver, err := e.APIServerPID()
	if err != nil {
		b.Logf("no CPU figures: %v", err)
	}
	profileDir := os.Getenv("MESHINIT_BENCH_PROFILE")

	literal := literalPolicies(b, shaped, literalNS)
	// However the benchmark ends, it leaves the cluster as it found it
	// (CLUSTER=existing: a cluster the user keeps).
	b.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		bound.set(b, ctx, e, boundAll)
		if _, err := e.Kubectl(ctx, literal, "delete", "--ignore-not-found", "-f", "-"); err != nil {
			b.Errorf("removing the literal policies: %v", err)
		}
	})

	// results[phase][round]
	results := make([][]phaseResult, len(phases))
	b.ResetTimer()
	for r := range rounds {
		for i := range phases {
			k := (i + r) % len(phases)
			p := phases[k]
			bound.set(b, ctx, e, p.bound)
			if p.literal {
				e.apply(b, ctx, literal)
			}
			// Removing a validating binding shows in no create's answer:
			// give the API server's informers time to see it.
			time.Sleep(2 * time.Second)
			awaitState(p)
			var profile func()
			if profileDir != "" && p.injected && !p.shape && r == 0 {
				file := filepath.Join(profileDir, "kube-apiserver-"+strings.NewReplacer(" ", "-", ",", "", "+", "-").Replace(p.name)+".pprof")
				profile = func() { profileAPIServer(b, ctx, client, file, 8) }
			}
			results[k] = append(results[k], runPhase(b, ctx, create, p, perPhase, apiserver, profile))
			if p.literal {
				if _, err := e.Kubectl(ctx, literal, "delete", "--ignore-not-found", "-f", "-"); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	bound.set(b, ctx, e, boundAll)
	b.StopTimer()
	reportInjection(b, phases, results, perPhase, rounds)
}

// phaseResult is one round of one phase.
type phaseResult struct {
	p50, p99 time.Duration
	// cpu is the kube-apiserver's CPU time per create (0: unknown).
	cpu time.Duration
}

// runPhase sends n creates into p.ns at injectionRate and returns their p50,
// p99 and the kube-apiserver's CPU time (process apiserver, 0: unknown) per
// create; profile, when set, runs beside the creates.
func runPhase(b *testing.B, ctx context.Context, create func(context.Context, injectionPhase) (time.Duration, *corev1.Pod, error),
	p injectionPhase, n, apiserver int, profile func()) phaseResult {
	b.Helper()
	var times []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed []error
	if profile != nil {
		wg.Go(profile)
	}
	cpuBefore := processCPU(apiserver)
	tick := time.NewTicker(time.Second / injectionRate)
	defer tick.Stop()
	for range n {
		<-tick.C
		wg.Go(func() {
			d, out, err := create(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, err)
			case (out.Annotations[webhook.StatusAnnotation] != "") != p.injected:
				failed = append(failed, fmt.Errorf("phase %s: a pod injected %v", p.name, !p.injected))
			default:
				times = append(times, d)
			}
		})
	}
	wg.Wait()
	cpu := processCPU(apiserver) - cpuBefore
	if len(failed) > 0 {
		b.Fatalf("phase %s: %d creates failed, the first: %v", p.name, len(failed), failed[0])
	}
	res := phaseResult{p50: percentile(times, 50), p99: percentile(times, 99)}
	if apiserver > 0 {
		res.cpu = cpu / time.Duration(n)
	}
	return res
}

// reportInjection prints each phase's figures over the rounds and against
// the floor (phases[0]), and whether the goals are met.
func reportInjection(b *testing.B, phases []injectionPhase, results [][]phaseResult, perPhase, rounds int) {
	b.Helper()
	fmt.Printf("%d server-side dry-run pod creates per phase and round at %d/s, %d rounds; the median round (lowest-highest):\n", perPhase, injectionRate, rounds)
	stat := func(rs []phaseResult, f func(phaseResult) time.Duration) (med, lo, hi time.Duration) {
		v := make([]time.Duration, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2], v[0], v[len(v)-1]
	}
	p50 := func(r phaseResult) time.Duration { return r.p50 }
	p99 := func(r phaseResult) time.Duration { return r.p99 }
	floor50, _, _ := stat(results[0], p50)
	medians := map[string][2]time.Duration{}
	for k, p := range phases {
		m50, lo50, hi50 := stat(results[k], p50)
		m99, lo99, hi99 := stat(results[k], p99)
		cpu, _, _ := stat(results[k], func(r phaseResult) time.Duration { return r.cpu })
		medians[p.name] = [2]time.Duration{m50, m99}
		name := strings.ReplaceAll(p.name, " ", "-")
		b.ReportMetric(ms(m50), "ms-p50-"+name)
		b.ReportMetric(ms(m99), "ms-p99-"+name)
		fmt.Printf("  %-16s p50 %6.2f ms (%.2f-%.2f)  p99 %6.2f ms (%.2f-%.2f)  apiserver CPU %5.2f ms/create",
			p.name, ms(m50), ms(lo50), ms(hi50), ms(m99), ms(lo99), ms(hi99), ms(cpu))
		if k > 0 {
			fmt.Printf("  %+5.2f ms p50 over the floor", ms(m50-floor50))
		}
		fmt.Println()
	}
	for _, p := range phases[1:] {
		if p.goal == 0 {
			continue
		}
		over := medians[p.name][0] - floor50
		fmt.Printf("%s: %+.2f ms p50 over the floor (goal: at most %+.1f ms): %s\n", p.name, ms(over), ms(p.goal), metOr(over <= p.goal))
	}
	pol, web := medians["policy"], medians["webhook"]
	fmt.Printf("policy below webhook at p50 and p99: %s\n", metOr(pol[0] < web[0] && pol[1] < web[1]))
}

func metOr(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// processCPU is the CPU time (user and system) process pid has used, 0 when
// it cannot be read.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// After the command name (in parentheses, which may hold spaces):
	// fields 14 and 15 of stat(5), utime and stime, in clock ticks (100/s).
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// profileAPIServer writes a CPU profile of the kube-apiserver over seconds
// to path (its /debug/pprof, which needs an admin).
func profileAPIServer(b *testing.B, ctx context.Context, client kubernetes.Interface, path string, seconds int) {
	data, err := client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		b.Errorf("profiling the kube-apiserver: %v", err)
		return
	}
	fmt.Printf("kube-apiserver CPU profile: %s (go tool pprof -top %s)\n", path, path)
}

// boundObjects are meshinit's admission objects that phases remove (the
// webhook configuration, every policy binding) and restore.
type boundObjects struct {
	manifests []string // JSON, as read from the cluster
	refs      []string // kind/name, for kubectl delete
	removed   []bool   // removed now
}

// bindPolicyInjector installs the policy injector for namespace ns alone
// beside the release (its objects renamed -bench), scopes the webhook away
// from ns, and returns every binding and the webhook configuration, for
// phases to remove.
func bindPolicyInjector(b *testing.B, ctx context.Context, e *env, ns string) *boundObjects {
	b.Helper()
	var mwc map[string]any
	if err := json.Unmarshal([]byte(e.must(b, ctx, "get", "mutatingwebhookconfiguration", release, "-o", "json")), &mwc); err != nil {
		b.Fatal(err)
	}
	var patch []map[string]any
	for i := range mwc["webhooks"].([]any) {
		patch = append(patch, map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/namespaceSelector/matchExpressions/-", i),
			"value": map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []string{ns}}})
	}
	p, _ := json.Marshal(patch)
	e.must(b, ctx, "patch", "mutatingwebhookconfiguration", release, "--type=json", "-p", string(p))
	objs, err := charts.Objects(charts.Options{Namespace: releaseNamespace, Values: e.Values(map[string]any{"injector": "policy"}),
		APIVersions: []string{"admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	var policies []string
	for _, o := range objs {
		if strings.HasPrefix(o.GetName(), release+"-inject") {
			policies = append(policies, benchScoped(b, o, ns))
		}
	}
	e.apply(b, ctx, strings.Join(policies, "\n---\n"))
	b.Cleanup(func() {
		_, _ = e.Kubectl(context.Background(), strings.Join(policies, "\n---\n"), "delete", "--ignore-not-found", "-f", "-")
	})
	bound := &boundObjects{}
	for _, kind := range []string{"mutatingwebhookconfiguration", "validatingadmissionpolicybinding", "mutatingadmissionpolicybinding"} {
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(e.must(b, ctx, "get", kind, "-l", "app.kubernetes.io/instance="+release, "-o", "json")), &list); err != nil {
			b.Fatal(err)
		}
		for _, item := range list.Items {
			u := unstructured.Unstructured{Object: item}
			u.SetResourceVersion("")
			u.SetUID("")
			u.SetCreationTimestamp(metav1.Time{})
			u.SetManagedFields(nil)
			out, _ := json.Marshal(u.Object)
			bound.manifests = append(bound.manifests, string(out))
			bound.refs = append(bound.refs, kind+"/"+u.GetName())
		}
	}
	if len(bound.refs) == 0 {
		b.Fatal("found none of meshinit's admission objects")
	}
	bound.removed = make([]bool, len(bound.refs))
	return bound
}

// set removes the objects set leaves out and restores those it keeps.
func (o *boundObjects) set(b *testing.B, ctx context.Context, e *env, set boundSet) {
	b.Helper()
	var remove, restore []string
	for i, ref := range o.refs {
		keep := set == boundAll || set == boundInjectors && !strings.HasPrefix(ref, "validatingadmissionpolicybinding/")
		switch {
		case keep && o.removed[i]:
			restore = append(restore, o.manifests[i])
		case !keep && !o.removed[i]:
			remove = append(remove, ref)
		}
		o.removed[i] = !keep
	}
	if len(remove) > 0 {
		e.must(b, ctx, append([]string{"delete", "--ignore-not-found"}, remove...)...)
	}
	if len(restore) > 0 {
		e.apply(b, ctx, strings.Join(restore, "\n---\n"))
	}
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

// shapeOf is out, a pod as a dry-run create returned it injected, as a
// client would send it: without what the API server sets (its name,
// UID, resourceVersion, timestamps) and without the API token volume and
// mounts the ServiceAccount admission plugin adds, which it adds again.
func shapeOf(out *corev1.Pod) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: out.GenerateName, Labels: out.Labels, Annotations: out.Annotations}, Spec: *out.Spec.DeepCopy()}
	token := func(name string) bool { return strings.HasPrefix(name, "kube-api-access-") }
	p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return token(v.Name) })
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return token(m.Name) })
		}
	}
	return p
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// literalPolicies are, as JSON manifests, the least an injector inside the
// API server and one policy can be, bound to namespace ns: a
// MutatingAdmissionPolicy that adds the webhook's injected container,
// volume and annotations of shaped (which it assumes the small pod does
// not have) as CEL literals, reinvoked never, and a
// ValidatingAdmissionPolicy of one literal validation.
func literalPolicies(b *testing.B, shaped *corev1.Pod, ns string) string {
	b.Helper()
	var redirect *corev1.Container
	for i := range shaped.Spec.InitContainers {
		if shaped.Spec.InitContainers[i].Name == "meshinit-redirect" {
			redirect = &shaped.Spec.InitContainers[i]
		}
	}
	var volume *corev1.Volume
	for i := range shaped.Spec.Volumes {
		if redirect != nil && len(redirect.VolumeMounts) > 0 && shaped.Spec.Volumes[i].Name == redirect.VolumeMounts[0].Name {
			volume = &shaped.Spec.Volumes[i]
		}
	}
	if redirect == nil || volume == nil {
		b.Fatalf("the webhook's injected pod has no meshinit-redirect with its volume: %+v", shaped.Spec)
	}
	container := celLiteral(b, redirect, "Object.spec.initContainers")
	vol := celLiteral(b, volume, "Object.spec.volumes")
	patch := fmt.Sprintf(`[JSONPatch{op: 'add', path: '/spec/initContainers', value: [%s]},
  object.spec.?volumes.orValue([]).size() == 0 ? JSONPatch{op: 'add', path: '/spec/volumes', value: [%s]} : JSONPatch{op: 'add', path: '/spec/volumes/-', value: %s},
  JSONPatch{op: 'add', path: '/metadata/annotations', value: %s}]`, container, vol, vol, celLiteral(b, shaped.Annotations, ""))
	match := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
		"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"},
			"operations": []any{"CREATE"}, "resources": []any{"pods"}}},
	}
	objs := []map[string]any{
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
			"metadata": map[string]any{"name": "meshinit-bench-literal"},
			"spec": map[string]any{"failurePolicy": "Fail", "reinvocationPolicy": "Never", "matchConstraints": match,
				"mutations": []any{map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{"expression": patch}}}}},
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
			"metadata": map[string]any{"name": "meshinit-bench-literal"},
			"spec":     map[string]any{"policyName": "meshinit-bench-literal"}},
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
			"metadata": map[string]any{"name": "meshinit-bench-literal"},
			"spec": map[string]any{"failurePolicy": "Fail", "matchConstraints": match,
				"validations": []any{map[string]any{"expression": "true"}}}},
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
			"metadata": map[string]any{"name": "meshinit-bench-literal"},
			"spec":     map[string]any{"policyName": "meshinit-bench-literal", "validationActions": []any{"Deny"}}},
	}
	var docs []string
	for _, o := range objs {
		out, err := json.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, string(out))
	}
	return strings.Join(docs, "\n---\n")
}

// celLiteral is v (a Kubernetes API type, or a map of strings) as a CEL
// literal for a MutatingAdmissionPolicy's patch: a struct as the Object
// initializer of its field path (path.field for each field, a list's
// elements with the list's path), a map of strings as a map, what JSON
// omits omitted.
func celLiteral(b *testing.B, v any, path string) string {
	b.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		b.Fatal(err)
	}
	var lit func(v any, t reflect.Type, path string) string
	lit = func(v any, t reflect.Type, path string) string {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch v := v.(type) {
		case map[string]any:
			var fields []string
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if t.Kind() == reflect.Map {
					fields = append(fields, strconv.Quote(k)+": "+lit(v[k], t.Elem(), path))
					continue
				}
				f, ok := jsonField(t, k)
				if !ok {
					b.Fatalf("%s has no field %q", t, k)
				}
				fields = append(fields, k+": "+lit(v[k], f, path+"."+k))
			}
			if t.Kind() == reflect.Map {
				return "{" + strings.Join(fields, ", ") + "}"
			}
			return path + "{" + strings.Join(fields, ", ") + "}"
		case []any:
			var elems []string
			for _, e := range v {
				elems = append(elems, lit(e, t.Elem(), path))
			}
			return "[" + strings.Join(elems, ", ") + "]"
		case string:
			return strconv.Quote(v)
		case float64:
			return strconv.FormatInt(int64(v), 10)
		case bool:
			return strconv.FormatBool(v)
		}
		b.Fatalf("%s: no CEL literal for %T", path, v)
		return ""
	}
	return lit(generic, reflect.TypeOf(v), path)
}

// jsonField is the type of t's field whose JSON name is name, looked for
// in embedded structs too (a Volume's VolumeSource), as encoding/json does.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for f := range t.Fields() {
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == name {
			return f.Type, true
		}
		if n == "" && f.Anonymous { // encoding/json inlines it
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
		}
	}
	return nil, false
}
