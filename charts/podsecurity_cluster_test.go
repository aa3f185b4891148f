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
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// The PodSecurity guard on a real API server (the chart's policy objects as
// the shared cluster installs them), beside the API server's own
// PodSecurity admission plugin: make test-matrix runs it on every
// supported version.

// guardNamespaces creates, for level, a namespace where the PodSecurity
// plugin enforces it ("upstream-<level>") and one where the guard does and
// the plugin enforces privileged ("guard-<level>"), as docs/podsecurity.md
// says to label it; and waits until the guard refuses a hostPath pod there.
func guardNamespaces(t *testing.T, c *cluster, level api.Level) (upstream, guard string) {
	t.Helper()
	upstream, guard = "upstream-"+string(level), "guard-"+string(level)
	for _, ns := range []*corev1.Namespace{
		namespace(upstream, api.EnforceLevelLabel, string(level)),
		namespace(guard, podSecurityLabel, string(level), api.EnforceLevelLabel, string(api.LevelPrivileged)),
	} {
		if err := c.client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 30*time.Second, "the guard in effect in "+guard, func() error {
		got, err := verdictOf(c.createDryRun(guard, hostPathPod()))
		if err != nil || got.binding != guardName {
			return fmt.Errorf("a hostPath pod: %+v, %v", got, err)
		}
		return nil
	})
	return upstream, guard
}

// guardCluster is the shared cluster (apiServer) with a client of its own
// that is not rate-limited: the guard's tests send some 600 requests, which
// client-go's default of 5 a second would take two minutes over.
func guardCluster(t *testing.T) *cluster {
	t.Helper()
	c := apiServer(t)
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.WarningHandler = rest.NoWarnings{}
	cl, err := client.New(cfg, client.Options{Scheme: c.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{APIServer: c.APIServer, client: cl}
}

// hostPathPod mounts the node's root: what baseline exists to refuse.
func hostPathPod() *corev1.Pod {
	return pod("host", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	})
}

// upstreamRefuses reads a create's error in a namespace the PodSecurity
// plugin enforces: whether the plugin refused it; any other error fails t.
func upstreamRefuses(t *testing.T, what string, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	if apierrors.IsInvalid(err) {
		return true // refused before admission, as upstream's own tests expect of some fixtures (failRequiresError)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("%s: %v", what, err)
	}
	return true
}

// guardRefusal reads a create's error in a namespace the guard enforces:
// the guard's message, "" when admitted; any other error fails t.
func guardRefusal(t *testing.T, what string, err error) string {
	t.Helper()
	if apierrors.IsInvalid(err) {
		return "refused by API validation: " + err.Error() // before admission (upstream's failRequiresError fixtures)
	}
	got, verr := verdictOf(err)
	if verr != nil || (err != nil && got.binding != guardName) {
		t.Fatalf("%s: %v", what, err)
	}
	return got.message
}

// TestGuardOnAPIServer: on the API server of the version under test, at
// each level, every fixture of upstream's newest version (as its own tests
// use them) is decided by the guard as upstream's checks at v1.37 decide
// the pod the API server keeps of it (defaulted, with the fields of features
// it has off dropped), with and without meshinit's container as the webhook
// injects it; on v1.37 that is what the fixture's directory says. The API
// server's own PodSecurity plugin, next door, decides each as upstream's
// checks at the server's version do (where that differs from v1.37 the test
// logs it: docs/podsecurity.md lists what does), and refuses meshinit's
// container.
func TestGuardOnAPIServer(t *testing.T) {
	c := guardCluster(t)
	serverVersion := api.MajorMinorVersion(1, min(c.Minor, 37))
	for _, level := range levels {
		upstreamNS, guardNS := guardNamespaces(t, c, level)
		for _, f := range fixturesAt(t, level, newestFixtures) {
			for _, meshed := range []bool{false, true} {
				p, what := f.pod.DeepCopy(), f.name
				if meshed {
					if p.Spec.OS != nil && p.Spec.OS.Name == corev1.Windows {
						continue // API validation forbids meshinit's Linux securityContext there
					}
					p, what = withMeshinit(p), what+" with meshinit"
				}
				// What the API server keeps of the pod, from a namespace
				// neither enforces.
				kept := p.DeepCopy()
				if err := c.createDryRun("plain", kept); apierrors.IsInvalid(err) {
					if got := guardRefusal(t, what, c.createDryRun(guardNS, p.DeepCopy())); got == "" || f.pass() {
						t.Errorf("%s: invalid elsewhere (%v), in the guard's namespace %q", what, err, got)
					}
					continue
				} else if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				want := upstreamVerdict(t, level, kept)
				if meshed {
					want = upstreamVerdict(t, level, withoutMeshinitCapabilities(kept))
				}
				if refused := len(want) > 0; refused == f.pass() {
					if c.Minor >= 37 {
						t.Errorf("%s: upstream's checks at v1.37 refuse the pod the API server keeps: %v", what, refused)
					}
					t.Logf("%s: v1.%d keeps a pod that v1.37's checks decide otherwise (refused: %v): it drops a field of a feature it has off", what, c.Minor, refused)
				}
				checkAgainstUpstream(t, what, guardRefusal(t, what, c.createDryRun(guardNS, p.DeepCopy())), want)

				refused := upstreamRefuses(t, what, c.createDryRun(upstreamNS, p.DeepCopy()))
				atServer := upstreamAt(api.LevelVersion{Level: level, Version: serverVersion}, kept)
				switch {
				case meshed && !refused:
					t.Errorf("%s: the PodSecurity plugin admits NET_ADMIN at %s", what, level)
				case !meshed && refused != (len(atServer) > 0):
					t.Errorf("%s: the PodSecurity plugin refuses it: %v, upstream's checks at %s: %v", what, refused, serverVersion, atServer)
				case !meshed && refused != (len(want) > 0):
					t.Logf("%s: the PodSecurity plugin of v1.%d decides otherwise than v1.37 (refused: %v); the guard decides as v1.37", what, c.Minor, refused)
				}
			}
		}
	}
}

// warnings collects the API server's warnings to a client.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// TestGuardWarnsAboutTemplates: as the PodSecurity plugin does, the guard
// admits a workload whose pod template it would refuse, with a warning
// that says why; a template it admits gets none.
func TestGuardWarnsAboutTemplates(t *testing.T) {
	c := guardCluster(t)
	_, guardNS := guardNamespaces(t, c, api.LevelBaseline)
	w := &warnings{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = w
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{hostPathPod(), `hostPath volumes (volume "host")`},
		{withMeshinit(minimalPod(t, api.LevelBaseline)), ""},
	} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: tc.pod.Spec},
		}}
		w.take()
		if _, err := cs.AppsV1().Deployments(guardNS).Create(context.Background(), d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(w.take(), "\n")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || tc.want != "" && !strings.Contains(got, guardName+"-templates") {
			t.Errorf("warnings %q, want one from %s-templates with %q", got, guardName, tc.want)
		}
	}
}

// TestGuardPodUpdates: a stored pod with meshinit's container may not have
// that container's image changed (it would run other code with NET_ADMIN)
// nor get a privileged ephemeral container; an ordinary ephemeral container
// and a change of the app's image are admitted.
func TestGuardPodUpdates(t *testing.T) {
	c := guardCluster(t)
	_, guardNS := guardNamespaces(t, c, api.LevelBaseline)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	ctx := context.Background()
	p := withMeshinit(minimalPod(t, api.LevelBaseline))
	p.Name = "updated"
	created, err := cs.CoreV1().Pods(guardNS).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Pods(guardNS).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	update := func(change func(p *corev1.Pod)) error {
		p := created.DeepCopy()
		change(p)
		_, err := cs.CoreV1().Pods(guardNS).Update(ctx, p, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// The trust policy refuses it: the guard, which does not read the image,
	// would exempt it.
	if got, err := verdictOf(update(func(p *corev1.Pod) {
		redirectContainer(p).Image = "registry.example/other:1"
	})); err != nil || got != (verdict{trustName + "-pod-security", msgUntrusted("registry.example/other:1"), metav1.StatusReasonForbidden}) {
		t.Errorf("meshinit's image changed: %+v, %v", got, err)
	}
	if err := update(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10" }); err != nil {
		t.Errorf("the app's image changed: %v", err)
	}

	debug := func(sc *corev1.SecurityContext) error {
		p := created.DeepCopy()
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			SecurityContext: sc}}}
		_, err := cs.CoreV1().Pods(guardNS).UpdateEphemeralContainers(ctx, p.Name, p, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	if got := guardRefusal(t, "a privileged debug container", debug(&corev1.SecurityContext{Privileged: ptr.To(true)})); !strings.Contains(got, `privileged (container "debug"`) {
		t.Errorf("a privileged debug container: %q", got)
	}
	if err := debug(nil); err != nil {
		t.Errorf("a debug container: %v", err)
	}
}

// TestGuardNotEvaluatedElsewhere: a namespace without the label is not the
// guard's: a hostPath pod is admitted there without the API server
// evaluating the guard at all, while one pod in a guarded namespace costs
// one evaluation.
func TestGuardNotEvaluatedElsewhere(t *testing.T) {
	c := guardCluster(t)
	_, guardNS := guardNamespaces(t, c, api.LevelBaseline)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	for _, tc := range []struct {
		ns          string
		evaluations float64
	}{{"plain", 0}, {guardNS, 1}} {
		before := guardEvaluations(t, cs)
		err := c.createDryRun(tc.ns, hostPathPod())
		if after := guardEvaluations(t, cs); after-before != tc.evaluations {
			t.Errorf("namespace %s: %v evaluations of the guard, want %v", tc.ns, after-before, tc.evaluations)
		}
		if admitted := err == nil; admitted != (tc.evaluations == 0) {
			t.Errorf("namespace %s: %v", tc.ns, err)
		}
	}
}

// guardEvaluations reads the API server's count of the guard's evaluations
// (every binding).
func guardEvaluations(t *testing.T, cs *kubernetes.Clientset) float64 {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	s := bufio.NewScanner(strings.NewReader(string(raw)))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		series, value, _ := strings.Cut(s.Text(), "} ")
		if strings.HasPrefix(series, "apiserver_validating_admission_policy_check_total{") && strings.Contains(series, `policy="`+guardName+`"`) {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatal(err)
			}
			n += v
		}
	}
	return n
}
