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

package charts_test

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/meshinit/meshinit/charts"
)

// BenchmarkPolicies is where the API server's time goes when it evaluates
// meshinit's ValidatingAdmissionPolicies on a pod create (make bench-policies):
// the policies compiled and evaluated in-process as the API server does
// (compile), on the small pod make bench-injection creates, against a floor
// measured in the same run: a policy of one literal validation evaluated on
// the same request through the same validator. Each row's CPU time per
// evaluation is the median of interleaved rounds (lowest-highest), and its
// difference from the floor; then each variable of the RedirectPolicy's
// policy on the injected pod alone, with the variables it reads (the API
// server evaluates a variable once per evaluation, when first read), so the
// rows show where an injected pod's evaluation spends its time.
// make bench-injection measures the whole create on a real API server.
func BenchmarkPolicies(b *testing.B) {
	objs := chartPolicyObjects(b, nil)
	var redirectVAP admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(b, objs, "ValidatingAdmissionPolicy", policyName, &redirectVAP)
	policy := compile(b, &redirectVAP)
	var injectVAP admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(b, renderMode(b, nil, "policy"), "ValidatingAdmissionPolicy", injectName, &injectVAP)
	injectPolicy := compile(b, &injectVAP)
	floor := compile(b, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "floor"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "true", MessageExpression: "'floor'"}}},
	})
	defaults := charts.Find(objs, "RedirectPolicy", "default")
	if len(defaults) != 1 {
		b.Fatalf("the chart renders %d default RedirectPolicies, want 1", len(defaults))
	}
	plain := request{object: pod("bench"), namespace: inNamespace, params: defaults[0]}
	injectedPod := request{object: pod("bench", injected), namespace: inNamespace, params: defaults[0]}
	if d := policy.denials(b, injectedPod); len(d) > 0 {
		b.Fatalf("the default RedirectPolicy denies the injected pod: %q", d)
	}

	rows := []benchRow{
		{name: "floor: one literal validation", run: validatingEach(b, floor, injectedPod)},
		{name: "RedirectPolicy, the pod injected (either mode)", run: validatingEach(b, policy, injectedPod)},
		{name: "meshinit-inject, the pod before injection (policy mode)", run: validatingEach(b, injectPolicy, plain)},
	}
	// Then, in pairs, each variable with its transitive reads, evaluated in
	// one activation, and its reads alone: the difference is its own time.
	policies := len(rows)
	reads := variableReads(redirectVAP.Spec.Variables)
	for _, v := range redirectVAP.Spec.Variables {
		deps := reads(v.Name)
		with := append(slices.Clone(deps), "variables."+v.Name)
		rows = append(rows,
			benchRow{name: v.Name, run: evaluating(b, policy, injectedPod, with...)},
			benchRow{name: v.Name + " reads", run: evaluating(b, policy, injectedPod, deps...)})
	}
	measure(rows, 5, 20*time.Millisecond)

	fmt.Printf("meshinit's ValidatingAdmissionPolicies evaluated in-process as the API server does, CPU time per evaluation, median of 5 interleaved rounds (lowest-highest):\n")
	floorNs := rows[0].median()
	type own struct {
		name     string
		own, all float64
	}
	for _, r := range rows[:policies] {
		fmt.Printf("  %-60s %9.1f µs (%.1f-%.1f)  %+8.1f µs over the floor\n", r.name, r.median()/1e3, slices.Min(r.ns)/1e3, slices.Max(r.ns)/1e3, (r.median()-floorNs)/1e3)
	}
	var vars []own
	for i := policies; i < len(rows); i += 2 {
		vars = append(vars, own{rows[i].name, rows[i].median() - rows[i+1].median(), rows[i].median()})
	}
	slices.SortFunc(vars, func(a, b own) int { return cmp.Compare(b.own, a.own) })
	fmt.Printf("the RedirectPolicy's variables on the injected pod, by their own time (less the variables they read), costliest first, the first %d:\n", min(len(vars), 25))
	fmt.Printf("  %-44s %12s %12s\n", "variable", "own µs", "with reads")
	for _, v := range vars[:min(len(vars), 25)] {
		fmt.Printf("  %-44s %12.1f %12.1f\n", v.name, v.own/1e3, v.all/1e3)
	}
	injectedRow := rows[1]
	b.ReportMetric((injectedRow.median()-floorNs)/1e3, "µs-injected-over-floor")
	b.ReportMetric(injectedRow.median()/floorNs, "x-floor-injected")
}

// A benchRow is one thing timed by measure: run does n evaluations.
type benchRow struct {
	name string
	run  func(n int)
	ns   []float64 // per evaluation, one per round
}

func (r benchRow) median() float64 {
	s := slices.Clone(r.ns)
	slices.Sort(s)
	return s[len(s)/2]
}

// measure times each row in rounds interleaved with the others (so drift on
// a shared machine hits every row alike), each round about d of CPU time.
// It counts the process's CPU time (the garbage collector's included), not
// the wall clock, so that time spent waiting for a core on a busy machine
// is not counted.
func measure(rows []benchRow, rounds int, d time.Duration) {
	iterations := make([]int, len(rows))
	for i, r := range rows {
		n := 1
		for {
			start := cpuTime()
			r.run(n)
			if el := cpuTime() - start; el > d/10 {
				iterations[i] = max(1, int(float64(n)*float64(d)/float64(el)))
				break
			}
			n *= 2
		}
	}
	for range rounds {
		for i := range rows {
			start := cpuTime()
			rows[i].run(iterations[i])
			rows[i].ns = append(rows[i].ns, float64((cpuTime()-start).Nanoseconds())/float64(iterations[i]))
		}
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// validating evaluates the whole policy for r, as the API server's
// validator does for one binding and one param.
func validatingEach(b *testing.B, c *compiled, r request) func(int) {
	va := r.attributes(b)
	return func(n int) {
		for range n {
			res := c.validator.Validate(context.Background(), schema.GroupVersionResource{}, va, r.params, r.namespace, celconfig.RuntimeCELCostBudget, nil)
			for _, d := range res.Decisions {
				if d.Evaluation == validating.EvalError {
					b.Fatalf("%s: evaluation error: %s", c.name, d.Message)
				}
			}
		}
	}
}

// evaluating evaluates expressions, in one activation, over the policy's variables for r.
func evaluating(b *testing.B, c *compiled, r request, exprs ...string) func(int) {
	if len(exprs) == 0 {
		exprs = []string{"true"}
	}
	cond := c.expressions(b, exprs)
	va := r.attributes(b)
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource{}, metav1.GroupVersionKind(va.VersionedKind))
	vars := plugincel.OptionalVariableBindings{VersionedParams: r.params}
	return func(n int) {
		for range n {
			results, _, err := cond.ForInput(context.Background(), va, req, vars, r.namespace, celconfig.RuntimeCELCostBudget)
			if err != nil {
				b.Fatal(err)
			}
			for i, res := range results {
				if res.Error != nil {
					b.Fatalf("%s: %v", exprs[i], res.Error)
				}
			}
		}
	}
}

// variableReads returns, for a policy's variables, the expressions
// "variables.<name>" of every variable one reads, directly or through
// others, in declaration order.
func variableReads(vars []admissionregistrationv1.Variable) func(name string) []string {
	ref := regexp.MustCompile(`variables\.([A-Za-z0-9_]+)`)
	direct := map[string][]string{}
	for _, v := range vars {
		for _, m := range ref.FindAllStringSubmatch(v.Expression, -1) {
			direct[v.Name] = append(direct[v.Name], m[1])
		}
	}
	return func(name string) []string {
		seen := map[string]bool{}
		var visit func(string)
		visit = func(n string) {
			for _, d := range direct[n] {
				if !seen[d] {
					seen[d] = true
					visit(d)
				}
			}
		}
		visit(name)
		var out []string
		for _, v := range vars {
			if seen[v.Name] && v.Name != name {
				out = append(out, "variables."+v.Name)
			}
		}
		return out
	}
}
