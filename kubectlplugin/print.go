package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/meshinit/meshinit/webhook"
)

// Output formats (-o).
const (
	outputTable = "table"
	outputJSON  = "json"
)

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes rows under a header, aligned as kubectl aligns them.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fixes writes "To fix:" and each command under what it is for: items are
// (what, command), a command for several things once, in order.
func fixes(w io.Writer, items [][2]string) {
	if len(items) == 0 {
		return
	}
	var commands []string
	what := map[string][]string{}
	for _, it := range items {
		if what[it[1]] == nil {
			commands = append(commands, it[1])
		}
		what[it[1]] = append(what[it[1]], it[0])
	}
	fmt.Fprintln(w, "\nTo fix:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %s:\n    %s\n", strings.Join(what[c], ", "), c)
	}
}

func statusColumn(s Status) string {
	if s == StatusProblem {
		return "PROBLEM"
	}
	return string(s)
}

// printFindings is `check`'s output.
func printFindings(w io.Writer, format string, r release, findings []Finding) error {
	n := countProblems(findings)
	if format == outputJSON {
		return printJSON(w, struct {
			Release  release   `json:"release"`
			Findings []Finding `json:"findings"`
			Problems int       `json:"problems"`
		}{r, findings, n})
	}
	fmt.Fprintf(w, "meshinit %s\n\n", r)
	var rows [][]string
	var todo [][2]string
	for _, f := range findings {
		rows = append(rows, []string{statusColumn(f.Status), f.Object, f.Detail})
		if f.Status == StatusProblem {
			todo = append(todo, [2]string{f.Object, f.Fix})
		}
	}
	if err := table(w, []string{"STATUS", "OBJECT", "DETAIL"}, rows); err != nil {
		return err
	}
	fixes(w, todo)
	fmt.Fprintf(w, "\n%s\n", summary(n, "no problems"))
	return nil
}

func summary(problems int, none string) string {
	if problems == 0 {
		return none
	}
	return plural(problems, "problem", "problems")
}

// printPods is `pods`' output.
func printPods(w io.Writer, format string, r PodsReport) error {
	if format == outputJSON {
		return printJSON(w, r)
	}
	var rows [][]string
	var todo [][2]string
	pods := 0
	for _, wl := range r.Workloads {
		for _, p := range wl.Pods {
			state := string(p.State)
			if p.Why != "" {
				state += " (" + p.Why + ")"
			}
			rows = append(rows, []string{wl.Namespace, wl.Workload.String(), p.Name, state, p.Detail})
			pods++
		}
		if wl.Fix != "" {
			todo = append(todo, [2]string{wl.Workload.String() + " in " + wl.Namespace, wl.Fix})
		}
	}
	if pods == 0 {
		fmt.Fprintln(w, "no running pod in an opted-in namespace or labelled "+webhook.PodLabel+"=true")
		return nil
	}
	if err := table(w, []string{"NAMESPACE", "WORKLOAD", "POD", "STATE", "DETAIL"}, rows); err != nil {
		return err
	}
	fixes(w, todo)
	fmt.Fprintf(w, "\n%s: %s\n", plural(pods, "pod", "pods"), summary(r.Problems, "all as the installed configuration injects them, or left alone as they asked"))
	return nil
}

// printAudit is `audit`'s output.
func printAudit(w io.Writer, format string, r AuditReport) error {
	if format == outputJSON {
		return printJSON(w, r)
	}
	policies := "none"
	if len(r.RedirectPolicies) > 0 {
		policies = strings.Join(r.RedirectPolicies, ", ")
	}
	fmt.Fprintf(w, "RedirectPolicies: %s\n\n", policies)
	if len(r.Results) == 0 {
		fmt.Fprintln(w, "no running pod or workload in an opted-in namespace or labelled "+webhook.PodLabel+"=true")
		return nil
	}
	var rows [][]string
	var todo [][2]string
	for _, res := range r.Results {
		rows = append(rows, []string{res.Namespace, res.Kind, res.Name, res.Workload, string(res.Verdict), res.Message})
		if res.Fix != "" {
			todo = append(todo, [2]string{strings.ToLower(res.Kind) + "/" + res.Name + " in " + res.Namespace, res.Fix})
		}
	}
	if err := table(w, []string{"NAMESPACE", "KIND", "NAME", "WORKLOAD", "VERDICT", "MESSAGE"}, rows); err != nil {
		return err
	}
	fixes(w, todo)
	fmt.Fprintf(w, "\n%s checked by the API server (server-side dry-run create): %s\n",
		plural(len(r.Results), "object", "objects"), summary(r.Problems, "every one admitted"))
	return nil
}

// printExplain is `explain`'s output.
func printExplain(w io.Writer, format string, e Explanation) error {
	if format == outputJSON {
		return printJSON(w, e)
	}
	state := string(e.State)
	if e.Why != "" {
		state += " (" + e.Why + ")"
	}
	fmt.Fprintf(w, "Pod:       %s/%s\nWorkload:  %s\nState:     %s: %s\n", e.Namespace, e.Name, e.Workload, state, e.Detail)
	if e.Fix != "" {
		fmt.Fprintf(w, "Fix:       %s\n", e.Fix)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Annotations)) {
		fmt.Fprintf(w, "Annotation: %s=%q\n", k, e.Annotations[k])
	}
	printRedirect(w, "The redirect its "+webhook.ContainerName+" applies", e.Running)
	printRedirect(w, "The redirect the installed configuration gives it when it is created again", e.Wanted)
	if e.Running == nil && e.Wanted == nil {
		fmt.Fprintln(w, "\nNo redirect: its traffic does not go through the proxy.")
	}
	return nil
}

func printRedirect(w io.Writer, title string, r *Redirect) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	fmt.Fprintf(w, "  args: %s\n", strings.Join(r.Args, " "))
	if r.Error != "" {
		fmt.Fprintf(w, "  not the redirector's: %s\n", r.Error)
		return
	}
	fmt.Fprintf(w, "  iptables rules (as `redirector print` shows them):\n")
	for _, line := range strings.Split(strings.TrimRight(r.Rules, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
}
