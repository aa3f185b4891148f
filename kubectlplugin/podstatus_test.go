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

package kubectlplugin

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/webhook"
)

// TestDataPlane: what a pod's status says of its meshinit-redirect, and
// its other containers, as codes: a crash loop, an Error exit and an image
// that cannot be pulled are failing (a problem, whatever the injection);
// restarts before success and a run not finished are information; another
// mesh's init container or any NET_ADMIN or privileged container is a
// second redirector, and so is a failure naming another owner's rules.
func TestDataPlane(t *testing.T) {
	status := func(state corev1.ContainerState, last *corev1.ContainerStateTerminated, restarts int32) corev1.PodStatus {
		s := corev1.ContainerStatus{Name: webhook.ContainerName, State: state, RestartCount: restarts}
		if last != nil {
			s.LastTerminationState.Terminated = last
		}
		return corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{s}}
	}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(code int32, reason, message string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}
	}
	ours := corev1.Container{Name: webhook.ContainerName}
	for _, tc := range []struct {
		name    string
		inits   []corev1.Container
		status  corev1.PodStatus
		state   PodState
		codes   []Code
		problem bool
		detail  string
	}{
		{"done", []corev1.Container{ours}, status(corev1.ContainerState{Terminated: terminated(0, "Completed", "IPv4: redirected\n")}, nil, 0), StateCurrent, nil, false, ""},
		{"crash loop", []corev1.Container{ours}, status(waiting("CrashLoopBackOff"), terminated(1, "Error", "apply failed: the deadline passed\n"), 5), StateFailing, nil, true,
			"meshinit-redirect fails: CrashLoopBackOff, last exit code 1, 5 restarts; it said: apply failed: the deadline passed"},
		{"Init:Error under restartPolicy Never", []corev1.Container{ours}, status(corev1.ContainerState{Terminated: terminated(2, "Error", "")}, nil, 0), StateFailing, nil, true, "Error, last exit code 2"},
		{"image pull", []corev1.Container{ours}, status(waiting("ImagePullBackOff"), nil, 0), StateFailing, nil, true, "ImagePullBackOff"},
		{"another owner's rules", []corev1.Container{ours}, status(waiting("CrashLoopBackOff"), terminated(1, "Error", "apply failed: not applying: 1 rule(s) of another owner would take the TCP traffic"), 2),
			StateFailing, []Code{CodeSecondRedirector}, true, "of another owner"},
		{"restarted, then done", []corev1.Container{ours}, status(corev1.ContainerState{Terminated: terminated(0, "Completed", "")}, terminated(1, "Error", ""), 3), StateCurrent, []Code{CodeRedirectRestarts}, false, ""},
		{"starting", []corev1.Container{ours}, status(waiting("PodInitializing"), nil, 0), StateCurrent, []Code{CodeRedirectPending}, false, ""},
		{"running", []corev1.Container{ours}, status(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, nil, 0), StateCurrent, []Code{CodeRedirectPending}, false, ""},
		{"not scheduled", []corev1.Container{ours}, corev1.PodStatus{}, StateCurrent, nil, false, ""},
		{"istio-init beside", []corev1.Container{ours, {Name: "istio-init"}}, corev1.PodStatus{}, StateCurrent, []Code{CodeSecondRedirector}, true, ""},
		{"linkerd-init beside", []corev1.Container{{Name: "linkerd-init"}, ours}, corev1.PodStatus{}, StateCurrent, []Code{CodeSecondRedirector}, true, ""},
		{"NET_ADMIN beside", []corev1.Container{ours, {Name: "setup", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_net_admin"}}}}},
			corev1.PodStatus{}, StateCurrent, []Code{CodeSecondRedirector}, true, ""},
		{"privileged beside", []corev1.Container{ours, {Name: "setup", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
			corev1.PodStatus{}, StateCurrent, []Code{CodeSecondRedirector}, true, ""},
		{"NET_BIND_SERVICE is no redirector", []corev1.Container{ours, {Name: "setup", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}}},
			corev1.PodStatus{}, StateCurrent, nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.inits}, Status: tc.status}
			rep := PodReport{State: StateCurrent, Code: CodePodCurrent, Detail: "as the installed configuration injects it"}
			dataPlane(&rep, pod)
			var codes []Code
			for _, is := range rep.Issues {
				codes = append(codes, is.Code)
			}
			if rep.State != tc.state || rep.Problem != tc.problem || !slices.Equal(codes, tc.codes) || !strings.Contains(rep.Detail+describeIssues(rep.Issues), tc.detail) {
				t.Errorf("state %s, problem %v, issues %+v, detail %q; want %s, %v, %v, %q", rep.State, rep.Problem, rep.Issues, rep.Detail, tc.state, tc.problem, tc.codes, tc.detail)
			}
			if tc.state == StateFailing && rep.Code != CodeRedirectFailing {
				t.Errorf("a failing pod's code %s, want %s", rep.Code, CodeRedirectFailing)
			}
		})
	}
}

func describeIssues(is []Issue) string {
	var b strings.Builder
	for _, i := range is {
		b.WriteString(string(i.Code) + ": " + i.Detail + "; ")
	}
	return b.String()
}

// TestDataPlaneFindings: check sums the pods up by code: failing redirects
// and second redirectors are problems, stale and missing pods warnings
// (pods -A says what to run), information stays information; with no
// problem, one ok.
func TestDataPlaneFindings(t *testing.T) {
	wl := func(name string, pods ...PodReport) WorkloadReport {
		return WorkloadReport{Namespace: "app", Workload: Workload{"Deployment", name}, Pods: pods}
	}
	healthy := PodsReport{Workloads: []WorkloadReport{wl("web", PodReport{Code: CodePodCurrent}, PodReport{Code: CodePodLeftAlone})}}
	if fs := dataPlaneFindings(healthy); len(fs) != 2 || fs[0].Status != StatusOK || fs[1].Code != CodePodLeftAlone || fs[1].Status != StatusInfo {
		t.Errorf("healthy: %+v", fs)
	}
	mixed := PodsReport{Workloads: []WorkloadReport{
		wl("web", PodReport{Code: CodeRedirectFailing, Problem: true, Issues: []Issue{{CodeSecondRedirector, true, "istio-init"}}}),
		wl("api", PodReport{Code: CodePodStale, Problem: true}, PodReport{Code: CodePodStale, Problem: true}),
		wl("db", PodReport{Code: CodePodCurrent, Issues: []Issue{{CodeRedirectRestarts, false, "restarted"}}}),
	}}
	got := map[Code]Status{}
	for _, f := range dataPlaneFindings(mixed) {
		got[f.Code] = f.Status
		if f.Code == CodePodStale && !strings.HasPrefix(f.Detail, "2 pods") {
			t.Errorf("stale: %q, want 2 pods", f.Detail)
		}
	}
	want := map[Code]Status{CodeRedirectFailing: StatusProblem, CodeSecondRedirector: StatusProblem, CodePodStale: StatusWarning, CodeRedirectRestarts: StatusInfo}
	if len(got) != len(want) {
		t.Errorf("findings by code %v, want %v", got, want)
	}
	for c, s := range want {
		if got[c] != s {
			t.Errorf("%s: %s, want %s", c, got[c], s)
		}
	}
}

// TestCodesDocumented: every code constant is documented once, in its
// area's range, and used by the code outside codes.go (a test in
// hack/docs checks its page).
func TestCodesDocumented(t *testing.T) {
	areas := map[byte]Area{'0': AreaControlPlane, '1': AreaDataPlane, '2': AreaPreInstall, '3': AreaVersion}
	seen := map[Code]bool{}
	for _, d := range Codes() {
		if seen[d.Code] {
			t.Errorf("%s documented twice", d.Code)
		}
		seen[d.Code] = true
		if len(d.Code) != 6 || !strings.HasPrefix(string(d.Code), "MI1") || areas[d.Code[3]] != d.Area {
			t.Errorf("%s: area %q does not match its number", d.Code, d.Area)
		}
	}
}
