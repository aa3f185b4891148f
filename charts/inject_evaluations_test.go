package charts_test

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestPolicyInjectorEvaluations counts, on a real API server with the
// ServiceAccount admission plugin on (as in a cluster; envtest turns it
// off), how often one pod create evaluates the mutating policy and how
// often the API server runs its mutating admission chain.
//
// The API server runs the chain a second time after any mutating policy was
// evaluated, and re-evaluates every policy with reinvocationPolicy IfNeeded
// that it evaluated (k8s.io/apiserver plugin/policy/mutating/dispatcher.go:
// each evaluation marks the object dirty, whatever the patch). A pod the
// policy injects is evaluated twice, and must be: in the second round the
// ServiceAccount plugin mounts the API token into every container without
// one, meshinit-redirect included, and the policy's second evaluation takes
// that back out, as the webhook's reinvocation does. A pod it leaves alone
// must cost neither: the bindings (the webhook's selectors) and the
// matchCondition keep the policy from being evaluated at all.
func TestPolicyInjectorEvaluations(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{Flags: []string{"disable-admission-plugins="}})
	if !policyInjectorServed(t, server) {
		return
	}
	admin := kubernetes.NewForConfigOrDie(server.Config)
	ctx := context.Background()
	for _, ns := range []*corev1.Namespace{namespace(releaseNamespace), namespace("app", namespaceLabel, "enabled"), namespace("plain")} {
		name := ns.Name
		if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No controller-manager creates it; the ServiceAccount plugin needs it.
		if _, err := admin.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.New(server.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{APIServer: server, client: cl}
	for _, o := range renderMode(t, nil, "policy") {
		if strings.HasPrefix(o.GetName(), injectName) && strings.Contains(o.GetKind(), "AdmissionPolicy") {
			c.apply(t, o)
		}
	}
	testkit.Eventually(t, 30*time.Second, "the policy injector in effect", func() error {
		p := pod("probe")
		if err := c.createDryRun("app", p); err != nil || len(p.Spec.InitContainers) == 0 {
			return fmt.Errorf("probe pod not injected: %v", err)
		}
		return nil
	})
	for _, tc := range []struct {
		name        string
		ns          string
		pod         *corev1.Pod
		evaluations float64 // of the mutating policy
		rounds      float64 // of the mutating admission chain
	}{
		{"not opted in", "plain", pod("p"), 0, 1},
		{"opted out by label", "app", pod("p", labels(podLabel, "false")), 0, 1},
		{"host network", "app", pod("p", func(p *corev1.Pod) { p.Spec.HostNetwork = true }), 0, 1},
		{"opted in by namespace", "app", pod("p"), 2, 2},
		{"opted in by label", "plain", pod("p", labels(podLabel, "true")), 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evaluations, rounds := admissionCounts(t, admin)
			p := tc.pod.DeepCopy()
			if err := c.createDryRun(tc.ns, p); err != nil {
				t.Fatal(err)
			}
			e, r := admissionCounts(t, admin)
			if e-evaluations != tc.evaluations || r-rounds != tc.rounds {
				t.Errorf("evaluations of %s %v, mutating admission rounds %v; want %v and %v", injectName, e-evaluations, r-rounds, tc.evaluations, tc.rounds)
			}
			if len(p.Spec.Containers[0].VolumeMounts) == 0 && !p.Spec.HostNetwork {
				t.Errorf("the app container has no API token mounted: the ServiceAccount plugin is off, and the test checks too little")
			}
			if injected := len(p.Spec.InitContainers) > 0; injected != (tc.evaluations > 0) {
				t.Fatalf("injected %v", injected)
			}
			if tc.evaluations > 0 && len(p.Spec.InitContainers[0].VolumeMounts) > 0 {
				t.Errorf("%s mounts %v", initContainerName, p.Spec.InitContainers[0].VolumeMounts)
			}
		})
	}
}

// admissionCounts reads the API server's metrics: the evaluations of the
// policy injector's mutating policy (all bindings) and the runs of the
// ServiceAccount plugin's mutation, one a round of the mutating chain.
func admissionCounts(t *testing.T, admin *kubernetes.Clientset) (evaluations, rounds float64) {
	t.Helper()
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(strings.NewReader(string(raw)))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		series, value, _ := strings.Cut(s.Text(), "} ")
		v, err := strconv.ParseFloat(value, 64)
		switch {
		case err != nil:
		case strings.HasPrefix(series, "apiserver_mutating_admission_policy_check_duration_seconds_count{") && strings.Contains(series, `policy="`+injectName+`"`):
			evaluations += v
		case strings.HasPrefix(series, "apiserver_admission_controller_admission_duration_seconds_count{") &&
			strings.Contains(series, `name="ServiceAccount"`) && strings.Contains(series, `operation="CREATE"`) && strings.Contains(series, `type="admit"`):
			rounds += v
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return evaluations, rounds
}
