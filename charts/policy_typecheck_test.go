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
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typeChecker is the type checker that fills in a policy's
// status.typeChecking (kube-controller-manager's
// validatingadmissionpolicy-status-controller runs k8s.io/apiserver's
// validating.TypeChecker; envtest runs no controller manager), resolving
// kinds and schemas, RedirectPolicy's included, from the test API server's
// discovery and OpenAPI.
func (c *cluster) typeChecker(t *testing.T) *validating.TypeChecker {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}
}

// checkTypes type-checks a policy as checker.Check does, in one pass.
// Upstream's Check compiles every variable again for each expression and
// each kind the policy matches (for meshinit's policy, minutes of CPU: the
// validations and messages times the kinds times the variables); here every
// validation and message expression is checked as a part of one expression,
// so the variables are compiled once per kind. Only when that finds a
// problem does it run checker.Check, whose warnings name the expression.
func checkTypes(checker *validating.TypeChecker, vap *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	var parts []string
	for _, v := range vap.Spec.Validations {
		parts = append(parts, "dyn("+v.Expression+")")
		if v.MessageExpression != "" {
			parts = append(parts, "dyn("+v.MessageExpression+")")
		}
	}
	one := vap.DeepCopy()
	one.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "[\n" + strings.Join(parts, ",\n") + "\n].size() >= 0"}}
	if len(checker.Check(one)) == 0 {
		return nil
	}
	return checker.Check(vap)
}

// TestTypeChecking type-checks the installed policy against the matched
// kinds and RedirectPolicy's schema: no warnings. To show that the check
// sees those types, a copy with a misspelt parameter field and a misspelt
// object field gets one warning for each.
func TestTypeChecking(t *testing.T) {
	c := apiServer(t)
	checker := c.typeChecker(t)
	var installed admissionregistrationv1.ValidatingAdmissionPolicy
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: policyName}, &installed); err != nil {
		t.Fatal(err)
	}
	for _, w := range checkTypes(checker, &installed) {
		t.Errorf("%s: %s", w.FieldRef, w.Warning)
	}

	// checkTypes finds what checker.Check finds (with the first two
	// validations only, as Check is slow).
	broken := installed.DeepCopy()
	broken.Spec.Validations = broken.Spec.Validations[:2]
	broken.Spec.Validations[0].Expression = "params.spec.requiredInboundPortz.size() == 0"
	broken.Spec.Validations[1].Expression = "object.metadata.nam != ''"
	warnings := checkTypes(checker, broken)
	if len(warnings) != 2 ||
		warnings[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(warnings[0].Warning, "undefined field 'requiredInboundPortz'") ||
		warnings[1].FieldRef != "spec.validations[1].expression" || !strings.Contains(warnings[1].Warning, "undefined field 'nam'") {
		t.Fatalf("misspelt fields were not reported: %+v", warnings)
	}
}
