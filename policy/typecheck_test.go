package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typeChecked waits for the API server to type-check the named policy and
// returns its status.
func (c *cluster) typeChecked(t *testing.T, name string) *admissionregistrationv1.TypeChecking {
	t.Helper()
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	eventually(t, 30*time.Second, func() error {
		if err := c.client.Get(context.Background(), client.ObjectKey{Name: name}, &vap); err != nil {
			return err
		}
		if vap.Status.ObservedGeneration != vap.Generation || vap.Status.TypeChecking == nil {
			return fmt.Errorf("policy %s generation %d not type-checked yet", name, vap.Generation)
		}
		return nil
	})
	return vap.Status.TypeChecking
}

// TestTypeChecking reads the API server's type checking of the installed
// policy (status.typeChecking): no warnings. To show that the check is real
// (it knows RedirectPolicy's schema and the matched kinds), a copy of the
// policy with a misspelt parameter field, bound to nothing, gets a warning.
func TestTypeChecking(t *testing.T) {
	c := apiServer(t)
	for _, w := range c.typeChecked(t, policyName).ExpressionWarnings {
		t.Errorf("%s: %s", w.FieldRef, w.Warning)
	}

	broken := chartPolicy(t, testValues)
	broken.Name = policyName + "-typecheck-probe"
	broken.Spec.Validations[0].Expression = "params.spec.requiredInboundPortz.size() == 0"
	if err := c.client.Create(context.Background(), broken); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.client.Delete(context.Background(), broken) })
	warnings := c.typeChecked(t, broken.Name).ExpressionWarnings
	if len(warnings) != 1 || warnings[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(warnings[0].Warning, "requiredInboundPortz") {
		t.Fatalf("a misspelt parameter field was not reported: %+v", warnings)
	}
}
