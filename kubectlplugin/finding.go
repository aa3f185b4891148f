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
)

// A Finding is one line of `check`: an object, what was found, and for a
// problem the command that fixes it.
type Finding struct {
	Status Status `json:"status"`
	// Object is what was looked at, as "kind name" (or "kind ns/name").
	Object string `json:"object"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix is the command to run (a problem's), with what to replace in
	// <angle brackets> where it cannot be known here.
	Fix string `json:"fix,omitempty"`
}

func ok(object, detail string) Finding {
	return Finding{Status: StatusOK, Object: object, Detail: detail}
}

func info(object, detail string) Finding {
	return Finding{Status: StatusInfo, Object: object, Detail: detail}
}

func problem(object, detail, fix string) Finding {
	return Finding{Status: StatusProblem, Object: object, Detail: detail, Fix: fix}
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
