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
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshinit/meshinit/webhook"
)

// RedirectRun is how the pod's meshinit-redirect ran, as the kubelet
// reports it in the pod's status.
type RedirectRun struct {
	// State is "waiting", "running" or "terminated"; Reason the kubelet's
	// (CrashLoopBackOff, Completed, Error, ...).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// ExitCode of the last run that ended.
	ExitCode *int32 `json:"exitCode,omitempty"`
	Restarts int32  `json:"restarts"`
	// Message is the redirector's termination message (initimage): what it
	// programmed per IP family, in which backend, or why apply failed; of
	// the current run, else of the last one that ended.
	Message string `json:"message,omitempty"`
}

// Issue is one more thing found about a pod, beside its state.
type Issue struct {
	Code    Code   `json:"code"`
	Problem bool   `json:"problem"`
	Detail  string `json:"detail"`
}

// otherRedirectors are init containers of other meshes that write NAT
// rules in the pod's network namespace, by the name their injectors give
// them.
var otherRedirectors = []string{"istio-init", "linkerd-init", "kuma-init", "consul-connect-inject-init"}

// secondRedirectors names the pod's containers, init or not, other than
// meshinit's, that can rewrite its NAT rules: another mesh's init
// container, or any with NET_ADMIN or privileged.
func secondRedirectors(spec corev1.PodSpec) []string {
	var out []string
	check := func(c corev1.Container) {
		if c.Name == webhook.ContainerName {
			return
		}
		sc := c.SecurityContext
		switch {
		case slices.Contains(otherRedirectors, c.Name):
			out = append(out, c.Name)
		case sc != nil && sc.Privileged != nil && *sc.Privileged:
			out = append(out, c.Name+" (privileged)")
		case sc != nil && sc.Capabilities != nil && slices.ContainsFunc(sc.Capabilities.Add, func(c corev1.Capability) bool {
			return strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_") == "NET_ADMIN"
		}):
			out = append(out, c.Name+" (NET_ADMIN)")
		}
	}
	for _, c := range spec.InitContainers {
		check(c)
	}
	for _, c := range spec.Containers {
		check(c)
	}
	return out
}

// redirectRun reads the status of the pod's meshinit-redirect; nil when
// the pod's status has none (not scheduled yet, or no such container).
func redirectRun(pod *corev1.Pod) *RedirectRun {
	i := slices.IndexFunc(pod.Status.InitContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == webhook.ContainerName })
	if i < 0 {
		return nil
	}
	s := pod.Status.InitContainerStatuses[i]
	r := &RedirectRun{Restarts: s.RestartCount}
	last := s.LastTerminationState.Terminated
	switch {
	case s.State.Terminated != nil:
		t := s.State.Terminated
		r.State, r.Reason, r.ExitCode, r.Message = "terminated", t.Reason, &t.ExitCode, t.Message
	case s.State.Running != nil:
		r.State = "running"
	case s.State.Waiting != nil:
		r.State, r.Reason = "waiting", s.State.Waiting.Reason
		if r.Reason == "" {
			r.Reason = "PodInitializing"
		}
	default:
		r.State = "waiting"
	}
	if r.Message == "" && last != nil {
		r.Message = last.Message
	}
	if r.ExitCode == nil && last != nil {
		r.ExitCode = &last.ExitCode
	}
	return r
}

// waitingProblems are the reasons a waiting container cannot start,
// beside CrashLoopBackOff: the kubelet's image and configuration errors.
var waitingProblems = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreCreateHookError", "PreStartHookError"}

// runIssues are what the pod's status says of its meshinit-redirect run:
// failing (CodeRedirectFailing), restarted before it succeeded
// (CodeRedirectRestarts), or not finished (CodeRedirectPending).
func runIssues(r *RedirectRun) []Issue {
	if r == nil {
		return nil
	}
	message := summarizeMessage(r.Message)
	switch {
	case r.State == "terminated" && r.ExitCode != nil && *r.ExitCode == 0:
		if r.Restarts > 0 {
			return []Issue{{CodeRedirectRestarts, false, fmt.Sprintf("%s restarted %d times before it succeeded", webhook.ContainerName, r.Restarts)}}
		}
		return nil
	case r.State == "terminated" || (r.State == "waiting" && slices.Contains(waitingProblems, r.Reason)):
		d := fmt.Sprintf("%s fails: %s", webhook.ContainerName, r.Reason)
		if r.ExitCode != nil && *r.ExitCode != 0 {
			d += fmt.Sprintf(", last exit code %d", *r.ExitCode)
		}
		if r.Restarts > 0 {
			d += fmt.Sprintf(", %d restarts", r.Restarts)
		}
		if message != "" {
			d += "; it said: " + message
		}
		issues := []Issue{{CodeRedirectFailing, true, d}}
		if strings.Contains(r.Message, "of another owner") {
			issues = append(issues, Issue{CodeSecondRedirector, true, "rules of another owner (another mesh, a CNI plugin, an init container of the pod) take the traffic before meshinit's"})
		}
		return issues
	}
	return []Issue{{CodeRedirectPending, false, fmt.Sprintf("%s has not finished yet (%s)", webhook.ContainerName, strings.TrimSpace(r.State+" "+r.Reason))}}
}

// summarizeMessage is a termination message on one line: its lines
// joined by "; ".
func summarizeMessage(m string) string {
	var lines []string
	for _, l := range strings.Split(m, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// dataPlane adds to rep what the pod's spec and status say beside its
// injection: how its meshinit-redirect ran, and other redirectors. A
// failing redirect makes the pod StateFailing whatever its injection.
func dataPlane(rep *PodReport, pod *corev1.Pod) {
	if others := secondRedirectors(pod.Spec); len(others) > 0 {
		rep.Issues = append(rep.Issues, Issue{CodeSecondRedirector, true,
			"another traffic redirector in the pod: " + strings.Join(others, ", ") + "; two redirectors rewrite each other's NAT rules"})
	}
	if slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == webhook.ContainerName }) {
		rep.Redirect = redirectRun(pod)
		rep.Issues = append(rep.Issues, runIssues(rep.Redirect)...)
	}
	for _, is := range rep.Issues {
		if is.Code == CodeRedirectFailing && rep.State != StateFailing {
			if rep.State == StateStale {
				rep.Issues = append(rep.Issues, Issue{CodePodStale, true, rep.Detail})
			}
			rep.State, rep.Code, rep.Why, rep.Detail = StateFailing, CodeRedirectFailing, "", is.Detail
		}
		rep.Problem = rep.Problem || is.Problem
	}
	rep.Issues = slices.DeleteFunc(rep.Issues, func(is Issue) bool { return is.Code == rep.Code && is.Detail == rep.Detail })
}

// failed reports whether the pod's meshinit-redirect ended with an error
// in a pod that has ended (restartPolicy Never: Init:Error, phase Failed),
// which `pods` shows although the pod does not run.
func failed(pod *corev1.Pod) bool {
	r := redirectRun(pod)
	return r != nil && r.State == "terminated" && r.ExitCode != nil && *r.ExitCode != 0
}
