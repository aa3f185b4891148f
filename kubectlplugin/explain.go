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
	"flag"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshinit/meshinit/redirect"
	"github.com/meshinit/meshinit/webhook"
)

// Explanation is `explain POD`: where the pod stands, the redirect its
// meshinit-redirect applies, and the one the installed configuration
// would give it instead.
type Explanation struct {
	PodReport
	Workload Workload `json:"workload"`
	Fix      string   `json:"fix,omitempty"`
	// Annotations are the pod's traffic.meshinit.io/* annotations.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Running is what its meshinit-redirect applies; nil without one.
	Running *Redirect `json:"running,omitempty"`
	// Wanted is what the installed configuration gives it once it is
	// created again, when that is not what runs (stale, missing).
	Wanted *Redirect `json:"wanted,omitempty"`
}

// Redirect is one meshinit-redirect's settings and rules.
type Redirect struct {
	// Args are the init container's arguments.
	Args []string `json:"args"`
	// Fingerprint is the settings' (the redirector logs it).
	Fingerprint string `json:"fingerprint,omitempty"`
	// Rules are the iptables-restore input `redirector print` shows for
	// these arguments.
	Rules string `json:"rules,omitempty"`
	// Error says why the arguments are not the redirector's.
	Error string `json:"error,omitempty"`
}

// explain is `explain` for one pod under cfg (o: its workload's owners).
func explain(pod *corev1.Pod, namespaceLabels map[string]string, cfg *webhook.Config, o owners) Explanation {
	rep, want := classifyPod(pod, namespaceLabels, cfg)
	e := Explanation{PodReport: rep, Workload: workloadOf(pod, o)}
	e.Fix = workloadFix(WorkloadReport{Namespace: pod.Namespace, Workload: e.Workload, Pods: []PodReport{rep}})
	for _, name := range redirect.AnnotationNames() {
		if v, ok := pod.Annotations[name]; ok {
			if e.Annotations == nil {
				e.Annotations = map[string]string{}
			}
			e.Annotations[name] = v
		}
	}
	if at := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == webhook.ContainerName }); at >= 0 {
		e.Running = redirectOf(pod.Spec.InitContainers[at].Args)
	}
	if rep.State != StateCurrent && want != nil {
		e.Wanted = redirectOf(want.Args)
	}
	return e
}

// redirectOf reads a meshinit-redirect's arguments as the redirector does
// (`redirector print` takes the same flags as apply) and plans its rules.
func redirectOf(args []string) *Redirect {
	r := &Redirect{Args: args}
	if len(args) == 0 || args[0] != "apply" {
		r.Error = `its arguments do not start with "apply": it does not run the redirector's apply`
		return r
	}
	fs := flag.NewFlagSet("print", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, err := redirect.ParseFlags(fs, args[1:])
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Fingerprint, r.Rules = c.Fingerprint(), redirect.NewPlan(c).String()
	return r
}
