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
	"context"
	"fmt"
	"slices"
	"strings"
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
// difference from the floor; then the RedirectPolicy's validations on the
// injected pod, cumulatively, so the rows show where an injected pod's
// evaluation spends its time.
// make bench-injection measures the whole create on a real API server.
func BenchmarkPolicies(b *testing.B) {
	objs := chartPolicyObjects(b, nil)
	var redirectVAP admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(b, objs, "ValidatingAdmissionPolicy", policyName, &redirectVAP)
	policy := compile(b, &redirectVAP)
	var injectVAP admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(b, renderMode(b, nil, "policy"), "ValidatingAdmissionPolicy", injectName, &injectVAP)
	injectPolicy := compile(b, &injectVAP)
	var trustVAP, guardVAP admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(b, objs, "ValidatingAdmissionPolicy", trustName, &trustVAP)
	charts.DecodeOne(b, charts.MustObjects(b, charts.Options{Namespace: releaseNamespace}, false), "ValidatingAdmissionPolicy", guardName, &guardVAP)
	trustPolicy, guardPolicy := compile(b, &trustVAP), compile(b, &guardVAP)
	trusts := charts.Find(objs, "RedirectorTrust", trustName)
	if len(trusts) != 1 {
		b.Fatalf("the chart renders %d RedirectorTrusts %s, want 1", len(trusts), trustName)
	}
	literal := []admissionregistrationv1.Validation{{Expression: "true", MessageExpression: "'floor'"}}
	floor := compile(b, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "floor"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: literal},
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

	// The API server evaluates every messageExpression of a policy after
	// its validations, passed or not, in an activation of their own
	// (validating.validator.Validate): the same policy with literal messages
	// shows what that costs a pod the policy admits.
	static := redirectVAP.DeepCopy()
	static.Name += "-static-messages"
	for i := range static.Spec.Validations {
		static.Spec.Validations[i].MessageExpression = "'refused'"
	}
	// The same policy's variables and match condition with one literal
	// validation: what its declarations cost before any is read (the API
	// server builds an accessor for every declared variable in each
	// activation: match conditions, validations, messages).
	declared := redirectVAP.DeepCopy()
	declared.Name += "-declared"
	declared.Spec.Validations = literal
	rows := []benchRow{
		{name: "floor: one literal validation", run: validatingEach(b, floor, injectedPod)},
		{name: "RedirectPolicy, the pod injected (either mode)", run: validatingEach(b, policy, injectedPod)},
		{name: "the same, its messages literals", run: validatingEach(b, compile(b, static), injectedPod)},
		{name: "its variables declared, none read, one literal validation", run: validatingEach(b, compile(b, declared), injectedPod)},
		{name: "meshinit-inject, the pod before injection (policy mode)", run: validatingEach(b, injectPolicy, plain)},
		{name: "meshinit-redirector-trust, the pod injected", run: validatingEach(b, trustPolicy, request{object: injectedPod.object, namespace: inNamespace, params: trusts[0]})},
		{name: "meshinit-pod-security, the pod injected", run: validatingEach(b, guardPolicy, request{object: injectedPod.object, namespace: inNamespace})},
	}
	measure(rows, 7, 100*time.Millisecond)

	fmt.Printf("meshinit's ValidatingAdmissionPolicies evaluated in-process as the API server does, CPU time per evaluation, median of 7 interleaved rounds (lowest-highest):\n")
	floorNs := rows[0].median()
	for _, r := range rows {
		fmt.Printf("  %-60s %9.1f µs (%.1f-%.1f)  %+8.1f µs over the floor\n", r.name, r.median()/1e3, slices.Min(r.ns)/1e3, slices.Max(r.ns)/1e3, (r.median()-floorNs)/1e3)
	}
	fmt.Printf("  of the RedirectPolicy's time over the floor, %.0f%% is declaring its %d variables (%.2f µs each)\n",
		100*(rows[3].median()-floorNs)/(rows[1].median()-floorNs), len(redirectVAP.Spec.Variables), (rows[3].median()-floorNs)/1e3/float64(len(redirectVAP.Spec.Variables)))
	// Then the RedirectPolicy's validations on the injected pod, in their
	// order, cumulatively: the first k evaluated in one activation, as the
	// API server evaluates them (each variable once, when first read), by
	// the CEL runtime cost the API server counts against its budget
	// (deterministic, unlike CPU time on a shared machine): row k less row
	// k-1 is what validation k adds to those before it.
	fmt.Printf("the RedirectPolicy's validations on the injected pod, the CEL cost each adds to those before it (with the variables it reads first), in order:\n")
	var exprs []string
	previous := int64(0)
	for i, v := range redirectVAP.Spec.Validations {
		exprs = append(exprs, v.Expression)
		cost := policy.costOf(b, injectedPod, exprs)
		fmt.Printf("  %6d  validation %d: %s\n", cost-previous, i+1, firstLine(v.Expression))
		previous = cost
	}
	fmt.Printf("  %6d  all\n", previous)
	var messages []string
	for _, v := range redirectVAP.Spec.Validations {
		if v.MessageExpression != "" {
			messages = append(messages, v.MessageExpression)
		}
	}
	fmt.Printf("  %6d  its messages, which the API server evaluates after the validations, admitted or not, in an activation of their own\n", policy.costOf(b, injectedPod, messages))
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

// costOf is the CEL runtime cost of evaluating exprs in one activation over
// the policy's variables for r.
func (c *compiled) costOf(b *testing.B, r request, exprs []string) int64 {
	cond := c.expressions(b, exprs)
	va := r.attributes(b)
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource{}, metav1.GroupVersionKind(va.VersionedKind))
	results, left, err := cond.ForInput(context.Background(), va, req, plugincel.OptionalVariableBindings{VersionedParams: r.params}, r.namespace, celconfig.RuntimeCELCostBudget)
	if err != nil {
		b.Fatal(err)
	}
	for i, res := range results {
		if res.Error != nil {
			b.Fatalf("%s: %v", exprs[i], res.Error)
		}
	}
	return celconfig.RuntimeCELCostBudget - left
}

// firstLine is s up to its first line break, at most 90 characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}
