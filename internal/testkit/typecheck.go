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

package testkit

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// NewTypeChecker is the type checker that fills in a policy's
// status.typeChecking (kube-controller-manager's
// validatingadmissionpolicy-status controller runs k8s.io/apiserver's
// validating.TypeChecker; envtest runs no controller manager), resolving
// kinds and schemas, CRDs' included, from the API server's discovery and
// OpenAPI.
func NewTypeChecker(cfg *rest.Config) (*validating.TypeChecker, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}, nil
}

// CheckTypes type-checks a policy as checker.Check does, with the same
// warnings, in one pass. Upstream's Check compiles every variable again for
// each expression and each kind the policy matches (for meshinit's policy,
// minutes of CPU: the validations and messages times the kinds times the
// variables); here every validation and message expression is checked as a
// part of one expression, so the variables are compiled once per kind. Only
// when that finds a problem does it run checker.Check, whose warnings name
// the expression.
func CheckTypes(checker *validating.TypeChecker, vap *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
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
