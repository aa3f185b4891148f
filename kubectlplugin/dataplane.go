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
	"context"
	"fmt"
	"slices"
	"strings"
)

// checkRuntimeCodes are the data-plane codes `check` counts as problems:
// pods that do not start, or whose traffic two redirectors fight over.
// The others (stale, missing, PodSecurity, refused) are warnings there,
// and problems in `pods`, which says per workload what to run: after a
// helm upgrade every pod is stale until its workload is restarted, and
// that is no fault of the installation.
var checkRuntimeCodes = []Code{CodeRedirectFailing, CodeSecondRedirector}

// dataPlaneFindings sum up `pods -A` for `check`: one finding per code
// found, naming the first workloads, and one ok when no pod has a problem.
func dataPlaneFindings(rep PodsReport) []Finding {
	type group struct {
		pods      int
		workloads []string
		problem   bool
	}
	groups := map[Code]*group{}
	pods, problems := 0, 0
	add := func(c Code, problem bool, w WorkloadReport) {
		g := groups[c]
		if g == nil {
			g = &group{}
			groups[c] = g
		}
		g.pods++
		g.problem = g.problem || problem
		if name := w.Namespace + "/" + w.Workload.String(); !slices.Contains(g.workloads, name) {
			g.workloads = append(g.workloads, name)
		}
	}
	for _, w := range rep.Workloads {
		for _, p := range w.Pods {
			pods++
			if p.Problem {
				problems++
			}
			add(p.Code, p.Problem, w)
			for _, is := range p.Issues {
				add(is.Code, is.Problem, w)
			}
		}
	}
	const obj = "pods"
	var out []Finding
	if problems == 0 {
		out = append(out, ok(CodePodCurrent, obj, fmt.Sprintf("%s of opted-in namespaces and labelled pods: none with a problem", plural(pods, "running pod", "running pods"))))
	}
	for _, d := range codes {
		g := groups[d.Code]
		if g == nil || d.Code == CodePodCurrent {
			continue
		}
		names := g.workloads
		if len(names) > 5 {
			names = append(slices.Clone(names[:5]), fmt.Sprintf("%d more", len(g.workloads)-5))
		}
		detail := fmt.Sprintf("%s (%s): %s", plural(g.pods, "pod", "pods"), strings.ToLower(d.Title), strings.Join(names, ", "))
		const fix = "kubectl meshinit pods -A   # each workload with the command that fixes it"
		switch {
		case !g.problem:
			out = append(out, info(d.Code, obj, detail))
		case slices.Contains(checkRuntimeCodes, d.Code):
			out = append(out, problem(d.Code, obj, detail, fix))
		default:
			out = append(out, warning(d.Code, obj, detail, fix))
		}
	}
	return out
}

// checkDataPlane is the data plane's part of `check`: `pods -A` summed up
// (dataPlaneFindings). Without the webhook's configuration, or the right
// to list pods everywhere, it says it did not look instead.
func checkDataPlane(ctx context.Context, c *clients, in Install) []Finding {
	if in.Config == nil {
		return []Finding{info(CodePodCurrent, "pods", "not checked: the webhook's configuration, which says what pods should carry, is not usable")}
	}
	rep, err := podsReport(ctx, c, in.Release, scope{})
	if err != nil {
		return []Finding{info(CodePodCurrent, "pods", "not checked: "+err.Error())}
	}
	return dataPlaneFindings(rep)
}
