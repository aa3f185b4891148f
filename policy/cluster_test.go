package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/poll"
)

// A cluster is a kube-apiserver and etcd (controller-runtime envtest, from
// the binaries in KUBEBUILDER_ASSETS) with the chart's policy objects
// installed, shared by every test of the package that needs one.
type cluster struct {
	env    *envtest.Environment
	config *rest.Config
	// auditLog is the API server's audit log: metadata of every pod request.
	auditLog string
	client   client.Client
	// kubectl runs as cluster admin: its binary and flags (--kubeconfig).
	kubectl []string
}

var (
	sharedOnce    sync.Once
	shared        *cluster
	sharedErr     error
	assetsMissing = os.Getenv("KUBEBUILDER_ASSETS") == ""
)

const skipReason = "KUBEBUILDER_ASSETS is unset, skipping the tests against a real API server: set it to a directory with kube-apiserver, etcd and kubectl (make tools-envtest builds them; make test sets it)"

func TestMain(m *testing.M) {
	if assetsMissing {
		fmt.Fprintln(os.Stderr, "policy: "+skipReason)
	}
	code := m.Run()
	if shared != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
		_ = os.RemoveAll(filepath.Dir(shared.auditLog))
	}
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
				"requiredInboundPorts":          []any{8443, 9443},
				"requiredOutboundPorts":         []any{5432},
				"allowedOutboundCIDRExclusions": []any{"10.0.0.0/8", "169.254.169.254/32"},
				"interception":                  "AllowOptOut",
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
	if assetsMissing {
		t.Skip(skipReason)
	}
	sharedOnce.Do(func() { shared, sharedErr = startCluster(t) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func startCluster(t *testing.T) (*cluster, error) {
	dir, err := os.MkdirTemp("", "meshinit-policy-audit-")
	if err != nil {
		return nil, err
	}
	auditPolicy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(podAuditPolicy), 0o600); err != nil {
		return nil, err
	}
	env := &envtest.Environment{}
	env.ControlPlane.GetAPIServer().Configure().
		Append("audit-policy-file", auditPolicy).
		Append("audit-log-path", filepath.Join(dir, "audit.log"))
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	c := &cluster{env: env, config: cfg, auditLog: filepath.Join(dir, "audit.log")}
	s := runtime.NewScheme()
	if err := errors.Join(scheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		return nil, err
	}
	warnings := rest.CopyConfig(cfg)
	warnings.WarningHandler = rest.NoWarnings{}
	if c.client, err = client.New(warnings, client.Options{Scheme: s}); err != nil {
		return nil, err
	}
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	k, err := admin.Kubectl()
	if err != nil {
		return nil, err
	}
	c.kubectl = append([]string{k.Path}, k.Opts...)
	for _, ns := range []*corev1.Namespace{
		namespace(releaseNamespace),
		namespace("team-a", namespaceLabel, "enabled"),
		namespace("team-strict", namespaceLabel, "enabled"),
		namespace("team-lax", namespaceLabel, "enabled"),
		namespace("plain"),
		namespace("opted-out", namespaceLabel, "disabled"),
	} {
		if err := c.client.Create(context.Background(), ns); err != nil {
			return nil, err
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
	return c, nil
}

// awaitInstalled waits until the API server enforces what startCluster
// installs: both bindings with Deny, the default RedirectPolicy and
// team-strict's. Tests that change any of it restore it and call this.
func (c *cluster) awaitInstalled(t *testing.T) {
	t.Helper()
	c.awaitVerdict(t, "team-a", pod("probe", injected, annotations(excludeInbound, "8443")),
		verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden})
	c.awaitVerdict(t, "team-strict", pod("probe", injected, annotations(excludeInbound, "9090")),
		verdict{namespaceBinding, msgStrictExcluded9090, metav1.StatusReasonForbidden})
}

// install applies the chart's policy objects rendered with values
// (server-side apply), waiting for the CRD before its objects.
func (c *cluster) install(t *testing.T, values map[string]any) {
	t.Helper()
	for _, o := range chartPolicyObjects(t, values) {
		c.apply(t, o)
	}
}

// apply server-side applies an object, retrying while its kind is not yet
// served (a CRD just created).
func (c *cluster) apply(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		return c.client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.FieldOwner("meshinit-policy-test"), client.ForceOwnership)
	})
}

// applyPolicy creates or updates a RedirectPolicy.
func (c *cluster) applyPolicy(t *testing.T, ns, name string, spec v1alpha1.RedirectPolicySpec) {
	t.Helper()
	c.apply(t, redirectPolicy(ns, name, spec))
}

// eventually retries f every 200ms until it returns nil or the timeout
// passes, then fails with f's last error.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	if err := poll.Until(context.Background(), 200*time.Millisecond, timeout, func(context.Context) error { return f() }); err != nil {
		t.Fatalf("after %s: %v", timeout, err)
	}
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
func (c *cluster) awaitVerdict(t *testing.T, ns string, obj client.Object, want verdict) {
	t.Helper()
	eventually(t, 30*time.Second, func() error { return c.checkVerdict(ns, obj, want) })
}

// run runs kubectl with stdin, returning its output and exit error.
func (c *cluster) run(stdin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(c.kubectl[0], append(c.kubectl[1:len(c.kubectl):len(c.kubectl)], args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
