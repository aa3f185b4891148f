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
	"errors"
	"fmt"
	"os"
	"regexp"
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
	// injector is "" for the RedirectPolicy's policy alone (no webhook
	// runs), or "policy" for the chart's policy injector too.
	injector string
}

var (
	policyServer = testkit.Shared{Options: testkit.Options{AuditPolicy: podAuditPolicy}, Setup: setUpFor("")}
	// installed is the shared cluster, once its setup is done.
	installed *cluster
	// injectorServer is another with the chart's policy injector installed
	// as well, for the tests of what holds in policy mode.
	injectorServer    = testkit.Shared{Options: testkit.Options{AuditPolicy: podAuditPolicy}, Setup: setUpFor("policy")}
	injectorInstalled *cluster
)

func TestMain(m *testing.M) {
	code := m.Run()
	policyServer.Stop()
	injectorServer.Stop()
	os.Exit(code)
}

// Values the tests install the chart with: the default RedirectPolicy
// requires inbound ports 8443 and 9443 and outbound port 5432, allows
// excluding 10.0.0.0/8 and 169.254.169.254/32 from outbound interception,
// UID 2000, GID 3000 and interface net1, and setting the proxy's identity
// and ports per pod, and is AllowOptOut (the chart's default is Required:
// every port; with ports listed, no pod may opt out either). The proxy
// containers are envoy (registry.example/envoy, any tag, no command or
// arguments), the trusted entries of trustedEntries, and the helm test's.
func testValues() map[string]any {
	return map[string]any{
		"policy": map[string]any{
			"proxyContainers": append([]any{map[string]any{"name": "envoy", "image": envoyImage}}, trustedEntries...),
			"defaultRedirectPolicy": map[string]any{
				"requiredInboundPorts":              []any{8443, 9443},
				"requiredOutboundPorts":             []any{5432},
				"allowedOutboundCIDRExclusions":     []any{"10.0.0.0/8", "169.254.169.254/32"},
				"allowedOutboundUIDExclusions":      []any{2000},
				"allowedOutboundGIDExclusions":      []any{3000},
				"allowedInboundInterfaceExclusions": []any{"net1"},
				"allowProxyIdentityOverride":        true,
				"allowProxyPortOverride":            true,
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

// injectorAPIServer is apiServer's with the chart's policy injector, or
// nil where the API server does not serve it (see policyInjectorServed):
// the test then ends.
func injectorAPIServer(t *testing.T) *cluster {
	t.Helper()
	if !policyInjectorServed(t, apiServer(t).APIServer) {
		return nil
	}
	injectorServer.Get(t)
	return injectorInstalled
}

// inEachInjector runs test as two subtests, "webhook" on apiServer's
// cluster and "policy" on injectorAPIServer's (where it is served).
func inEachInjector(t *testing.T, test func(*testing.T, *cluster)) {
	t.Run("webhook", func(t *testing.T) { test(t, apiServer(t)) })
	t.Run("policy", func(t *testing.T) {
		if c := injectorAPIServer(t); c != nil {
			test(t, c)
		}
	})
}

// clusterNamespaces are the namespaces setUp creates.
var clusterNamespaces = map[string]*corev1.Namespace{
	releaseNamespace: namespace(releaseNamespace),
	"team-a":         namespace("team-a", namespaceLabel, "enabled"),
	"team-strict":    namespace("team-strict", namespaceLabel, "enabled"),
	"team-lax":       namespace("team-lax", namespaceLabel, "enabled"),
	"plain":          namespace("plain"),
	"opted-out":      namespace("opted-out", namespaceLabel, "disabled"),
}

// setUpFor returns the setup of a shared cluster with injector (see
// cluster).
func setUpFor(injector string) func(testing.TB, *testkit.APIServer) {
	return func(t testing.TB, server *testkit.APIServer) {
		c := setUp(t, server, injector)
		if injector == "" {
			installed = c
		} else {
			injectorInstalled = c
		}
	}
}

// newCluster is a cluster of server with injector (see cluster), nothing
// installed: its client knows RedirectPolicies and drops the API server's
// warnings.
func newCluster(t testing.TB, server *testkit.APIServer, injector string) *cluster {
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
	return &cluster{APIServer: server, client: cl, injector: injector}
}

// setUp creates the tests' namespaces and installs the chart's policy
// objects (with injector) and the namespace policies.
func setUp(t testing.TB, server *testkit.APIServer, injector string) *cluster {
	c := newCluster(t, server, injector)
	for _, ns := range clusterNamespaces {
		c.createNamespace(t, ns)
	}
	c.install(t, testValues())
	// Namespace policies: team-strict adds inbound port 9090 and forbids
	// opting out; team-lax tries to relax everything (and cannot).
	c.applyPolicy(t, "team-strict", "strict", v1alpha1.RedirectPolicySpec{
		RequiredInboundPorts: ports(9090), Interception: v1alpha1.InterceptionRequired,
	})
	c.applyPolicy(t, "team-lax", "lax", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionOptional})
	c.awaitInstalled(t)
	return c
}

// awaitInstalled waits until the API server enforces what setUp installs:
// both bindings with Deny, the default RedirectPolicy and team-strict's,
// and the policy injector's policies. Tests that change any of it restore
// it and call this.
func (c *cluster) awaitInstalled(t testing.TB) {
	t.Helper()
	if c.injector == "policy" {
		// The mutating policy injects, and each validating one refuses.
		testkit.Eventually(t, 30*time.Second, "the policy injector in effect", func() error {
			p := pod("probe")
			if err := c.createDryRun("team-a", p); err != nil || len(p.Spec.InitContainers) == 0 {
				return fmt.Errorf("probe pod not injected: %v", err)
			}
			if got, err := verdictOf(c.createDryRun("team-a", pod("probe", labels(podLabel, "yes")))); err != nil || got.binding != injectName {
				return fmt.Errorf("probe pod labelled yes: %+v, %v", got, err)
			}
			return nil
		})
	}
	c.awaitVerdict(t, "team-a", pod("probe", injected, annotations(excludeInbound, "8443")),
		verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden})
	c.awaitVerdict(t, "team-strict", pod("probe", injected, annotations(excludeInbound, "9090")),
		verdict{namespaceBinding, msgStrictExcluded9090, metav1.StatusReasonForbidden})
}

// install applies the chart's policy objects rendered with values (and the
// cluster's injector), server-side, waiting for the CRD before its objects.
func (c *cluster) install(t testing.TB, values map[string]any) {
	t.Helper()
	if c.injector != "" {
		values = withInjector(values, c.injector)
	}
	// The release namespace holds the RedirectorTrust naming the trusted redirector images.
	if err := c.client.Create(context.Background(), namespace(releaseNamespace)); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range chartPolicyObjects(t, values) {
		c.apply(t, o)
	}
}

// createNamespace creates ns and waits for its default ServiceAccount, which
// the ServiceAccount admission plugin needs before a pod can be created there
// (testkit.Namespace). The shared cluster keeps a namespace for the rest of
// the process, even deleted (no namespace controller finalizes it): a test
// names its own with testkit.RunName, so go test -count=N runs it anew.
func (c *cluster) createNamespace(t testing.TB, ns *corev1.Namespace) {
	t.Helper()
	testkit.Namespace(t, c.Config, ns.DeepCopy())
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
// full, nothing is stored. obj becomes what the API server would store (its
// namespace set), when admitted.
func (c *cluster) createDryRun(ns string, obj client.Object) error {
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
	// labelledSuffix ends the names of the bindings for pods and workloads
	// labelled meshinit.io/inject=true outside opted-in namespaces.
	labelledSuffix = "-labelled"
)

// verdictOf reads a create error: nil is admitted; a denial by a
// ValidatingAdmissionPolicy gives its binding, message and reason; anything
// else is an error.
func verdictOf(err error) (verdict, error) {
	if err == nil {
		return verdict{}, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return verdict{}, err
	}
	m := denial.FindStringSubmatch(status.Status().Message)
	if m == nil {
		return verdict{}, err
	}
	return verdict{binding: m[1], message: m[2], reason: status.Status().Reason}, nil
}

// denial is how the API server words a ValidatingAdmissionPolicy's denial:
// the binding's name, and the message.
var denial = regexp.MustCompile(`ValidatingAdmissionPolicy '[^']+' with binding '([^']+)' denied request: (?s)(.*)$`)

// checkVerdict creates obj (dry run) once and compares the policy's verdict
// with want; a want without reason accepts any.
//
// Outside namespaces that opt in, the policy's bindings are the -labelled
// ones (policy-bindings.yaml): want names the binding as in an opted-in
// namespace, and the suffix is added here.
func (c *cluster) checkVerdict(ns string, obj client.Object, want verdict) error {
	got, err := verdictOf(c.createDryRun(ns, obj.DeepCopyObject().(client.Object)))
	if err != nil {
		return err
	}
	if want.binding != "" && !strings.HasSuffix(want.binding, labelledSuffix) {
		var namespace corev1.Namespace
		if err := c.client.Get(context.Background(), client.ObjectKey{Name: ns}, &namespace); err != nil {
			return err
		}
		if namespace.Labels[namespaceLabel] != "enabled" {
			want.binding += labelledSuffix
		}
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
