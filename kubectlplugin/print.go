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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/meshinit/meshinit/webhook"
)

// Everything printed that came from the cluster (names, messages,
// annotations, arguments) goes through clean, in tables, or through
// printJSON: anyone who may create a pod or a policy chooses some of it,
// and a terminal acts on control characters.

// unsafe reports whether a terminal could act on r, or a reader be fooled
// by it: control characters (C0, newline and tab included, which would
// forge lines and columns; DEL; C1, among them the 8-bit CSI) and Unicode
// format characters (bidirectional overrides, zero-width ones).
func unsafe(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// clean writes each unsafe character of s as its Go escape (\x1b, \n,
// \u202e), and invalid UTF-8 as U+FFFD.
func clean(s string) string {
	if strings.IndexFunc(s, unsafe) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafe(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// printJSON writes v as indented JSON. encoding/json escapes C0 controls
// (and replaces invalid UTF-8); the other unsafe characters are escaped
// too (\u009b), so the JSON reads back the same and prints harmlessly.
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	out := buf.Bytes()
	if bytes.IndexFunc(out, func(r rune) bool { return r >= 0x7f && unsafe(r) }) >= 0 {
		var esc bytes.Buffer
		for _, r := range string(out) {
			switch {
			case r < 0x7f || !unsafe(r):
				esc.WriteRune(r)
			case r > 0xffff:
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&esc, `\u%04x\u%04x`, hi, lo)
			default:
				fmt.Fprintf(&esc, `\u%04x`, r)
			}
		}
		out = esc.Bytes()
	}
	_, err := w.Write(out)
	return err
}

// table writes rows under a header, aligned as kubectl aligns them; every
// cell is cleaned.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = clean(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
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
		fmt.Fprintf(w, "  %s:\n    %s\n", clean(strings.Join(what[c], ", ")), clean(c))
	}
}

func statusColumn(s Status) string {
	switch s {
	case StatusProblem:
		return "PROBLEM"
	case StatusWarning:
		return "WARNING"
	}
	return string(s)
}

// codesURL is where every code's page is, docs/codes/<code>.md.
const codesURL = "https://github.com/meshinit/meshinit/blob/main/docs/codes/"

// CheckReport is `check`'s report (and `check --pre`'s, whose release is
// the one it would install).
type CheckReport struct {
	Release  release   `json:"release"`
	Findings []Finding `json:"findings"`
	Problems int       `json:"problems"`
}

// printFindings is `check`'s output: a table (the code's column and
// detail in full; -o wide adds nothing yet) or JSON.
func printFindings(w io.Writer, format string, r release, findings []Finding) error {
	n := countProblems(findings)
	if format == outputJSON {
		return printJSON(w, CheckReport{r, findings, n})
	}
	fmt.Fprintf(w, "meshinit %s\n\n", clean(r.String()))
	return findingsTable(w, findings, "no problems")
}

// findingsTable writes findings, the fixes of the problems and warnings,
// and a summary (none when there is no problem).
func findingsTable(w io.Writer, findings []Finding, none string) error {
	var rows [][]string
	var todo [][2]string
	warnings := 0
	for _, f := range findings {
		rows = append(rows, []string{statusColumn(f.Status), string(f.Code), f.Object, f.Detail})
		if f.Status == StatusWarning {
			warnings++
		}
		if (f.Status == StatusProblem || f.Status == StatusWarning) && f.Fix != "" {
			todo = append(todo, [2]string{f.Object + " (" + string(f.Code) + ")", f.Fix})
		}
	}
	if err := table(w, []string{"STATUS", "CODE", "OBJECT", "DETAIL"}, rows); err != nil {
		return err
	}
	fixes(w, todo)
	end := summary(countProblems(findings), none)
	if warnings > 0 {
		end += ", " + plural(warnings, "warning", "warnings")
	}
	fmt.Fprintf(w, "\n%s (each code: %s<code>.md)\n", end, codesURL)
	return nil
}

func summary(problems int, none string) string {
	if problems == 0 {
		return none
	}
	return plural(problems, "problem", "problems")
}

// printPods is `pods`' output: a table (-o wide adds each pod's
// meshinit-redirect restarts and termination message) or JSON.
func printPods(w io.Writer, format string, r PodsReport) error {
	if format == outputJSON {
		return printJSON(w, r)
	}
	var rows [][]string
	var todo [][2]string
	pods := 0
	for _, wl := range r.Workloads {
		for _, p := range wl.Pods {
			rows = append(rows, podRow(wl, p, format == outputWide))
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
	header := []string{"NAMESPACE", "WORKLOAD", "POD", "STATE", "CODE", "DETAIL"}
	if format == outputWide {
		header = append(header, "RESTARTS", "REDIRECT")
	}
	if err := table(w, header, rows); err != nil {
		return err
	}
	fixes(w, todo)
	fmt.Fprintf(w, "\n%s: %s\n", plural(pods, "pod", "pods"), summary(r.Problems, "all as the installed configuration injects them, or left alone as they asked"))
	return nil
}

// podRow is a pod's row of `pods`: its state's code and the codes of its
// issues, its detail and theirs.
func podRow(wl WorkloadReport, p PodReport, wide bool) []string {
	state := string(p.State)
	if p.Why != "" {
		state += " (" + p.Why + ")"
	}
	codes, details := []string{string(p.Code)}, []string{p.Detail}
	for _, is := range p.Issues {
		codes = append(codes, string(is.Code))
		details = append(details, string(is.Code)+": "+is.Detail)
	}
	row := []string{wl.Namespace, wl.Workload.String(), p.Name, state, strings.Join(codes, ","), strings.Join(details, "; ")}
	if wide {
		restarts, message := "-", "-"
		if p.Redirect != nil {
			restarts = fmt.Sprint(p.Redirect.Restarts)
			if m := summarizeMessage(p.Redirect.Message); m != "" {
				message = m
			}
		}
		row = append(row, restarts, message)
	}
	return row
}

// printAudit is `audit`'s output.
func printAudit(w io.Writer, format string, r AuditReport) error {
	if format == outputJSON {
		return printJSON(w, r)
	}
	policies := "none"
	if len(r.RedirectPolicies) > 0 {
		policies = clean(strings.Join(r.RedirectPolicies, ", "))
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
	fmt.Fprintf(w, "Pod:       %s/%s\nWorkload:  %s\nState:     %s: %s [%s]\n", clean(e.Namespace), clean(e.Name), clean(e.Workload.String()), clean(state), clean(e.Detail), e.Code)
	for _, is := range e.Issues {
		fmt.Fprintf(w, "Also:      %s [%s]\n", clean(is.Detail), is.Code)
	}
	if r := e.PodReport.Redirect; r != nil {
		exit := ""
		if r.ExitCode != nil {
			exit = fmt.Sprintf(", exit code %d", *r.ExitCode)
		}
		fmt.Fprintf(w, "Run:       %s %s%s, %d restarts\n", r.State, clean(r.Reason), exit, r.Restarts)
		for _, l := range strings.Split(strings.TrimSpace(r.Message), "\n") {
			if l != "" {
				fmt.Fprintf(w, "Message:   %s\n", clean(l))
			}
		}
	}
	if e.Fix != "" {
		fmt.Fprintf(w, "Fix:       %s\n", clean(e.Fix))
	}
	for _, k := range slices.Sorted(maps.Keys(e.Annotations)) {
		fmt.Fprintf(w, "Annotation: %s=%s\n", clean(k), clean(strconv.Quote(e.Annotations[k])))
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
	fmt.Fprintf(w, "  args: %s\n", clean(strings.Join(r.Args, " ")))
	if r.Error != "" {
		fmt.Fprintf(w, "  not the redirector's: %s\n", clean(r.Error))
		return
	}
	fmt.Fprintf(w, "  iptables rules (as `redirector print` shows them):\n")
	for _, line := range strings.Split(strings.TrimRight(r.Rules, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", clean(line))
	}
}
