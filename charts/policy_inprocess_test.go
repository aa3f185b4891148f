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
	"reflect"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// compiled is the chart's ValidatingAdmissionPolicy compiled the way the API
// server compiles it (compilePolicy in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating/plugin.go, at the
// version in go.mod), so its CEL can be evaluated in-process: to read the
// policy's variables and to measure its runtime cost. Match conditions are
// left to the tests against a real API server.
type compiled struct {
	name        string // the policy's
	compiler    *plugincel.CompositedCompiler
	validations plugincel.ConditionEvaluator
	messages    plugincel.ConditionEvaluator
	validator   validating.Validator
}

var (
	policyVars  = plugincel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: true}
	messageVars = plugincel.OptionalVariableDeclarations{HasParams: true}
)

func compile(t testing.TB, vap *admissionregistrationv1.ValidatingAdmissionPolicy) *compiled {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vap.Spec.Variables {
		if r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, policyVars, environment.StoredExpressions); r.Error != nil {
			t.Fatalf("variable %s: %v", v.Name, r.Error)
		}
	}
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range vap.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		messages = append(messages, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	c := &compiled{
		name:        vap.Name,
		compiler:    compiler,
		validations: compiler.CompileCondition(validations, policyVars, environment.StoredExpressions),
		messages:    compiler.CompileCondition(messages, messageVars, environment.StoredExpressions),
	}
	for _, errs := range [][]error{c.validations.CompilationErrors(), c.messages.CompilationErrors()} {
		for _, err := range errs {
			t.Fatalf("compiling the policy: %v", err)
		}
	}
	c.validator = validating.NewValidator(c.validations, nil, compiler.CompileCondition(nil, policyVars, environment.StoredExpressions), c.messages, vap.Spec.FailurePolicy, nil)
	return c
}

// request is one admission request: a pod or workload created in a
// namespace, checked against one RedirectPolicy.
type request struct {
	object    runtime.Object // typed, as the API server passes it
	namespace *corev1.Namespace
	params    runtime.Object // unstructured, as the API server's informer passes it
}

func (r request) attributes(t testing.TB) *admission.VersionedAttributes {
	t.Helper()
	gvk, err := kindOf(r.object)
	if err != nil {
		t.Fatal(err)
	}
	meta := r.object.(metav1.Object)
	gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resourceOf(gvk.Kind)}
	attr := admission.NewAttributesRecord(r.object, nil, gvk, r.namespace.Name, meta.GetName(), gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "test"})
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: gvk}
	va.VersionedObject.Set(r.object)
	return va
}

// validate returns the policy's decisions, as the API server computes them.
func (c *compiled) validate(t testing.TB, r request) validating.ValidateResult {
	t.Helper()
	va := r.attributes(t)
	return c.validator.Validate(context.Background(), schema.GroupVersionResource{}, va, r.params, r.namespace, celconfig.RuntimeCELCostBudget, nil)
}

// denials returns the messages of the policy's denials for a request, in
// order, failing the test on an evaluation error.
func (c *compiled) denials(t testing.TB, r request) []string {
	t.Helper()
	var out []string
	for _, d := range c.validate(t, r).Decisions {
		if d.Evaluation == validating.EvalError {
			t.Fatalf("evaluation error: %s", d.Message)
		}
		if d.Action == validating.ActionDeny {
			out = append(out, d.Message)
		}
	}
	return out
}

// cost returns the runtime cost of the validations (with the variables they
// evaluate) and of the message expressions (which evaluate their variables
// again), out of the budget of one evaluation, celconfig.RuntimeCELCostBudget.
func (c *compiled) cost(t *testing.T, r request) (validations, messages int64) {
	t.Helper()
	va := r.attributes(t)
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource{}, metav1.GroupVersionKind(va.VersionedKind))
	vars := plugincel.OptionalVariableBindings{VersionedParams: r.params}
	results, left, err := c.validations.ForInput(context.Background(), va, req, vars, r.namespace, celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatalf("evaluating the validations: %v", err)
	}
	for _, res := range results {
		if res.Error != nil {
			t.Fatalf("validation %q: %v", res.ExpressionAccessor.GetExpression(), res.Error)
		}
	}
	_, leftAfterMessages, err := c.messages.ForInput(context.Background(), va, req, vars, r.namespace, left)
	if err != nil {
		t.Fatalf("evaluating the message expressions: %v", err)
	}
	return celconfig.RuntimeCELCostBudget - left, left - leftAfterMessages
}

// anyExpression is an ad-hoc CEL expression over the policy's variables.
type anyExpression string

func (e anyExpression) GetExpression() string      { return string(e) }
func (e anyExpression) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType} }

// expressions compiles ad-hoc expressions over the policy's variables.
func (c *compiled) expressions(t testing.TB, exprs []string) plugincel.ConditionEvaluator {
	t.Helper()
	accessors := make([]plugincel.ExpressionAccessor, len(exprs))
	for i, e := range exprs {
		accessors[i] = anyExpression(e)
	}
	cond := c.compiler.CompileCondition(accessors, policyVars, environment.StoredExpressions)
	for _, err := range cond.CompilationErrors() {
		t.Fatal(err)
	}
	return cond
}

// eval evaluates ad-hoc expressions (typically "variables.<name>") for a
// request and converts each result to the Go type of the matching out pointer.
func (c *compiled) eval(t testing.TB, r request, exprs []string, out ...any) {
	t.Helper()
	cond := c.expressions(t, exprs)
	va := r.attributes(t)
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource{}, metav1.GroupVersionKind(va.VersionedKind))
	results, _, err := cond.ForInput(context.Background(), va, req, plugincel.OptionalVariableBindings{VersionedParams: r.params}, r.namespace, celconfig.RuntimeCELCostBudget)
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		if res.Error != nil {
			t.Fatalf("%s: %v", exprs[i], res.Error)
		}
		if err := convert(res.EvalResult, out[i]); err != nil {
			t.Fatalf("%s = %v: %v", exprs[i], res.EvalResult, err)
		}
	}
}

func convert(v ref.Val, out any) error {
	native, err := v.ConvertToNative(reflect.TypeOf(out).Elem())
	if err != nil {
		return err
	}
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(native))
	return nil
}
