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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// typeChecker is testkit's type checker on the test API server.
func (c *cluster) typeChecker(t *testing.T) *validating.TypeChecker {
	t.Helper()
	checker, err := testkit.NewTypeChecker(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return checker
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
	for _, w := range testkit.CheckTypes(checker, &installed) {
		t.Errorf("%s: %s", w.FieldRef, w.Warning)
	}

	// CheckTypes finds what checker.Check finds (with the first two
	// validations only, as Check is slow).
	broken := installed.DeepCopy()
	broken.Spec.Validations = broken.Spec.Validations[:2]
	broken.Spec.Validations[0].Expression = "params.spec.requiredInboundPortz.size() == 0"
	broken.Spec.Validations[1].Expression = "object.metadata.nam != ''"
	warnings := testkit.CheckTypes(checker, broken)
	if len(warnings) != 2 ||
		warnings[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(warnings[0].Warning, "undefined field 'requiredInboundPortz'") ||
		warnings[1].FieldRef != "spec.validations[1].expression" || !strings.Contains(warnings[1].Warning, "undefined field 'nam'") {
		t.Fatalf("misspelt fields were not reported: %+v", warnings)
	}
}
