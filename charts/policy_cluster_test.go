package charts_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/testkit"
)

// A cluster is a kube-apiserver and etcd with the chart's policy objects
// installed, shared by every test of the package that needs one; its
// audit log has the metadata of every pod request.
type cluster struct {
	*testkit.APIServer
	client client.Client
}

var (
	policyServer = testkit.Shared{Options: testkit.Options{AuditPolicy: podAuditPolicy}, Setup: setUp}
	// installed is the shared cluster, once setUp is done.
	installed *cluster
)

func TestMain(m *testing.M) {
	code := m.Run()
	policyServer.Stop()
	os.Exit(code)
}

// Values the tests install the chart with: the default RedirectPolicy
// requires inbound ports 8443 and 9443 and outbound port 5432, allows
// excluding 10.0.0.0/8 and 169.254.169.254/32 from outbound interception,
// and lets pods opt out (AllowOptOut; the chart's default is Required). The
// proxy containers are envoy (registry.example/envoy) and the helm test's.
func testValues() map[string]any {
	return map[string]any{
		"policy": map[string]any{
			"proxyContainers": []any{map[string]any{"name": "envoy", "image": envoyImage}},
			"defaultRedirectPolicy": map[string]any{
				"requiredInboundPorts":              []any{8443, 9443},
				"requiredOutboundPorts":             []any{5432},
				"allowedOutboundCIDRExclusions":     []any{"10.0.0.0/8", "169.254.169.254/32"},
				"allowedOutboundUIDExclusions":      []any{2000},
				"allowedOutboundGIDExclusions":      []any{3000},
				"allowedInboundInterfaceExclusions": []any{"net1"},
				"allowProxyIdentityOverride":        true,
				"interception":                      "AllowOptOut",
			},
		},
	}
}

// testValuesWith is testValues with its policy section changed by change.
func testValuesWith(change func(policy map[string]any)) map[string]any {
	v := testValues()
	change(v["policy"].(map[string]any))
	return v
}

// envoyImage is the image of testValues' proxy container.
const envoyImage = "registry.example/envoy"

// podAuditPolicy logs the metadata (with admission's audit annotations) of
// every pod request.
const podAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
    resources: [{group: "", resources: [pods]}]
  - level: None
`

// apiServer returns the shared cluster, starting it on first use, or skips
// the test when KUBEBUILDER_ASSETS is unset.
func apiServer(t *testing.T) *cluster {
	t.Helper()
	policyServer.Get(t)
	return installed
}

// setUp creates the tests' namespaces and installs the chart's policy
// objects and the namespace policies.
func setUp(t testing.TB, server *testkit.APIServer) {
	s := runtime.NewScheme()
	if err := errors.Join(scheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	noWarnings := rest.CopyConfig(server.Config)
	noWarnings.WarningHandler = rest.NoWarnings{}
	cl, err := client.New(noWarnings, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{APIServer: server, client: cl}
	for _, ns := range []*corev1.Namespace{
		namespace(releaseNamespace),
		namespace("team-a", namespaceLabel, "enabled"),
		namespace("team-strict", namespaceLabel, "enabled"),
		namespace("team-lax", namespaceLabel, "enabled"),
		namespace("plain"),
		namespace("opted-out", namespaceLabel, "disabled"),
	} {
		if err := c.client.Create(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	c.install(t, testValues())
	// Namespace policies: team-strict adds inbound port 9090 and forbids
	// opting out; team-lax tries to relax everything (and cannot).
	c.applyPolicy(t, "team-strict", "strict", v1alpha1.RedirectPolicySpec{
		RequiredInboundPorts: ports(9090), Interception: v1alpha1.InterceptionRequired,
	})
	c.applyPolicy(t, "team-lax", "lax", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionOptional})
	c.awaitInstalled(t)
	installed = c
}

// awaitInstalled waits until the API server enforces what startCluster
// installs: both bindings with Deny, the default RedirectPolicy and
// team-strict's. Tests that change any of it restore it and call this.
func (c *cluster) awaitInstalled(t testing.TB) {
	t.Helper()
	c.awaitVerdict(t, "team-a", pod("probe", injected, annotations(excludeInbound, "8443")),
		verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden})
	c.awaitVerdict(t, "team-strict", pod("probe", injected, annotations(excludeInbound, "9090")),
		verdict{namespaceBinding, msgStrictExcluded9090, metav1.StatusReasonForbidden})
}

// install applies the chart's policy objects rendered with values
// (server-side apply), waiting for the CRD before its objects.
func (c *cluster) install(t testing.TB, values map[string]any) {
	t.Helper()
	for _, o := range chartPolicyObjects(t, values) {
		c.apply(t, o)
	}
}

// apply server-side applies an object, retrying while its kind is not yet
// served (a CRD just created).
func (c *cluster) apply(t testing.TB, o *unstructured.Unstructured) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("applying %s %s", o.GetKind(), o.GetName()), func() error {
		return c.client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.FieldOwner("meshinit-policy-test"), client.ForceOwnership)
	})
}

// applyPolicy creates or updates a RedirectPolicy.
func (c *cluster) applyPolicy(t testing.TB, ns, name string, spec v1alpha1.RedirectPolicySpec) {
	t.Helper()
	c.apply(t, redirectPolicy(ns, name, spec))
}

// createDryRun creates obj in namespace ns with dryRun=All: admission runs in
// full, nothing is stored.
func (c *cluster) createDryRun(ns string, obj client.Object) error {
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetNamespace(ns)
	return c.client.Create(context.Background(), obj, client.DryRunAll)
}

// verdict is what the policy decided for a request: "" when admitted, else
// the binding that denied it and its message.
type verdict struct {
	binding, message string
	reason           metav1.StatusReason
}

const policyName = "meshinit-redirectpolicy"

// bindings of the policy (chart release "meshinit").
const (
	clusterBinding   = policyName + "-cluster"
	namespaceBinding = policyName + "-namespace"
)

// verdictOf reads a create error: nil is admitted; a denial by the policy
// gives its binding, message and reason; anything else is an error.
func verdictOf(err error) (verdict, error) {
	if err == nil {
		return verdict{}, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return verdict{}, err
	}
	msg := status.Status().Message
	prefix := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '", policyName)
	i := strings.Index(msg, prefix)
	if i < 0 {
		return verdict{}, err
	}
	binding, message, ok := strings.Cut(msg[i+len(prefix):], "' denied request: ")
	if !ok {
		return verdict{}, err
	}
	return verdict{binding: binding, message: message, reason: status.Status().Reason}, nil
}

// checkVerdict creates obj (dry run) once and compares the policy's verdict
// with want; a want without reason accepts any.
func (c *cluster) checkVerdict(ns string, obj client.Object, want verdict) error {
	got, err := verdictOf(c.createDryRun(ns, obj))
	if err != nil {
		return err
	}
	if got.binding != want.binding || got.message != want.message || (want.reason != "" && got.reason != want.reason) {
		return fmt.Errorf("%s %s/%s:\n got  %+v\n want %+v", obj.GetObjectKind().GroupVersionKind().Kind, ns, obj.GetName(), got, want)
	}
	return nil
}

// awaitVerdict repeats checkVerdict until it passes: after a change to the
// policy, its bindings or a RedirectPolicy, the API server's informers take a
// moment to see it.
func (c *cluster) awaitVerdict(t testing.TB, ns string, obj client.Object, want verdict) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "the policy's verdict", func() error { return c.checkVerdict(ns, obj, want) })
}
