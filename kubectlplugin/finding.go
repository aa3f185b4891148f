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

// Status is how a Finding counts: a problem makes the command exit 1.
type Status string

const (
	// StatusOK: as it should be.
	StatusOK Status = "ok"
	// StatusProblem: wrong; the Finding says what to run about it.
	StatusProblem Status = "problem"
	// StatusInfo: worth knowing, nothing to fix (a pod that opted out).
	StatusInfo Status = "info"
	// StatusWarning: may be wrong, worth a look (a version skew, another
	// mesh's CNI plugin); it does not make the command exit 1.
	StatusWarning Status = "warning"
)

// A Finding is one line of `check`: an object, what was found, and for a
// problem the command that fixes it.
type Finding struct {
	Status Status `json:"status"`
	// Code names what was checked (docs/codes/<code>.md).
	Code Code `json:"code"`
	// Object is what was looked at, as "kind name" (or "kind ns/name").
	Object string `json:"object"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix is the command to run (a problem's), with what to replace in
	// <angle brackets> where it cannot be known here.
	Fix string `json:"fix,omitempty"`
}

func ok(code Code, object, detail string) Finding {
	return Finding{Status: StatusOK, Code: code, Object: object, Detail: detail}
}

func info(code Code, object, detail string) Finding {
	return Finding{Status: StatusInfo, Code: code, Object: object, Detail: detail}
}

func warning(code Code, object, detail, fix string) Finding {
	return Finding{Status: StatusWarning, Code: code, Object: object, Detail: detail, Fix: fix}
}

func problem(code Code, object, detail, fix string) Finding {
	return Finding{Status: StatusProblem, Code: code, Object: object, Detail: detail, Fix: fix}
}

// countProblems counts the findings with StatusProblem.
func countProblems(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Status == StatusProblem {
			n++
		}
	}
	return n
}
