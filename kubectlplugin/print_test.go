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
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/meshinit/meshinit/internal/testkit"
)

// The tables of each command, as golden files (testdata/*.golden; go test
// -update rewrites them): the columns, the fixes (one command for all it
// fixes) and the summary.
func TestTables(t *testing.T) {
	r := release{Name: "meshinit", Namespace: "meshinit-system"}
	findings := []Finding{
		ok(CodeRedirectPolicyAPI, "CustomResourceDefinition redirectpolicies.meshinit.io", "served as meshinit.io/v1alpha1; 2 RedirectPolicies"),
		info(CodeCertificateRead, "serving certificate", "endpoint 10.0.0.1:9443: i/o timeout"),
		problem(CodeCertificateExpiry, "serving certificate", "served by Secret meshinit-system/meshinit-webhook-tls: expired 2 hours ago", "kubectl -n meshinit-system delete secret meshinit-webhook-tls"),
		problem(CodeCAExpiry, "CA meshinit-webhook-ca", "expired 1 hour ago", "kubectl -n meshinit-system delete secret meshinit-webhook-tls"),
	}
	pods := PodsReport{Problems: 3, Workloads: []WorkloadReport{
		{Namespace: "app", Workload: Workload{"Deployment", "web"}, Fix: "kubectl rollout restart deployment/web -n app", Pods: []PodReport{
			{Name: "web-1-a", State: StateStale, Code: CodePodStale, Detail: `--exclude-outbound-ports "" -> "22"`, Problem: true},
			{Name: "web-1-b", State: StateCurrent, Code: CodePodCurrent, Detail: "as the installed configuration injects it",
				Redirect: &RedirectRun{State: "terminated", Reason: "Completed", ExitCode: new(int32), Restarts: 1, Message: "IPv4: redirected, 2 chains and 9 rules in nft IPv4 (--iptables-mode=auto)\nIPv6: redirected, 2 chains and 9 rules in nft IPv6 (--ipv6=auto)\n"},
				Issues:   []Issue{{CodeRedirectRestarts, false, "meshinit-redirect restarted 1 times before it succeeded"}}},
			{Name: "web-1-c", State: StateFailing, Code: CodeRedirectFailing, Problem: true, Detail: "meshinit-redirect fails: CrashLoopBackOff, last exit code 1, 3 restarts; it said: apply failed: not applying: 1 rule(s) of another owner",
				Redirect: &RedirectRun{State: "waiting", Reason: "CrashLoopBackOff", Restarts: 3, Message: "apply failed: not applying: 1 rule(s) of another owner\n"},
				Issues:   []Issue{{CodeSecondRedirector, true, "another traffic redirector in the pod: istio-init"}}},
		}},
		{Namespace: "app", Workload: Workload{"Pod", "late"}, Fix: "kubectl delete pod late -n app && kubectl apply -f <its manifest>", Pods: []PodReport{
			{Name: "late", State: StateNotInjected, Code: CodePodMissing, Why: WhyMissing, Detail: "no meshinit-redirect init container", Problem: true},
		}},
	}}
	audit := auditReport([]string{"app/require-8080"}, []AuditResult{
		{Namespace: "app", Kind: "Deployment", Name: "web", Verdict: VerdictRefused, Message: "port 8080 is required by RedirectPolicy app/require-8080"},
		{Namespace: "app", Kind: "Pod", Name: "web-1-a", Workload: "deployment/web", Verdict: VerdictRefused, Message: "port 8080 is required by RedirectPolicy app/require-8080"},
		{Namespace: "app", Kind: "Pod", Name: "late", Workload: "pod/late", Verdict: VerdictAdmitted},
	})
	for name, print := range map[string]func(*bytes.Buffer) error{
		"check":     func(b *bytes.Buffer) error { return printFindings(b, outputTable, r, findings) },
		"pods":      func(b *bytes.Buffer) error { return printPods(b, outputTable, pods) },
		"pods-wide": func(b *bytes.Buffer) error { return printPods(b, outputWide, pods) },
		"version": func(b *bytes.Buffer) error {
			v := VersionReport{Plugin: "0.2.0", Chart: "meshinit-0.1.0", AppVersion: "0.1.0", Release: r, Template: "ghcr.io/meshinit/webhook:0.1.0", Deployment: "meshinit-webhook",
				Webhook: []RunningImage{{"meshinit-webhook-a", "ghcr.io/meshinit/webhook:0.1.0"}, {"meshinit-webhook-b", "ghcr.io/meshinit/webhook:0.0.9"}}}
			v.Findings = versionFindings(v)
			return printVersions(b, v)
		},
		"audit": func(b *bytes.Buffer) error { return printAudit(b, outputTable, audit) },
	} {
		var b bytes.Buffer
		if err := print(&b); err != nil {
			t.Fatal(err)
		}
		testkit.Golden(t, "testdata/"+name+".golden", b.Bytes())
	}
}

// TestJSON: -o json is the report itself, as scripts read it.
func TestJSON(t *testing.T) {
	var b bytes.Buffer
	in := []Finding{problem(CodeInjector, "x", "a -> b", "fix")}
	if err := printFindings(&b, outputJSON, release{Name: "m", Namespace: "ns"}, in); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Release  release
		Findings []Finding
		Problems int
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Problems != 1 || got.Findings[0] != in[0] || got.Release.Namespace != "ns" || !bytes.Contains(b.Bytes(), []byte("a -> b")) {
		t.Errorf("-o json:\n%s", b.String())
	}
}

// hostile is what a pod's or a policy's author could put in a name,
// message or annotation to act on the terminal of whoever runs kubectl
// meshinit, or to forge its output: an escape sequence (clear the screen,
// title), 8-bit CSI, DEL, a carriage return and a newline with a forged
// row, a tab (a forged column), a right-to-left override and a zero-width
// space, a language tag (outside the BMP), and invalid UTF-8.
const hostile = "web\x1b[2J\x1b]0;pwned\x07\u009b31m\x7f\rOK\nok\tforged row\u202eevil\u200b\U000E0001\xff"

// TestHostileStringsPrintHarmlessly: every command's table and JSON print
// what came from the cluster with no character a terminal acts on (only
// the output's own newlines, and the tables' padding), in as many lines as
// with harmless strings; the JSON reads back as the same strings.
func TestHostileStringsPrintHarmlessly(t *testing.T) {
	printers := func(s string) map[string]func(w *bytes.Buffer, format string) error {
		r := release{Name: s, Namespace: s}
		findings := []Finding{problem(CodeInjector, s, s, s)}
		pods := PodsReport{Problems: 1, Workloads: []WorkloadReport{{Namespace: s, Workload: Workload{"Deployment", s}, Fix: s,
			Pods: []PodReport{{Name: s, State: StateStale, Why: s, Detail: s, Problem: true}}}}}
		audit := auditReport([]string{s}, []AuditResult{{Namespace: s, Kind: "Pod", Name: s, Workload: s, Verdict: VerdictRefused, Message: s, Fix: s}})
		explanation := Explanation{PodReport: PodReport{Namespace: s, Name: s, State: StateStale, Why: s, Detail: s}, Workload: Workload{"Pod", s}, Fix: s,
			Annotations: map[string]string{s: s}, Running: &Redirect{Args: []string{s}, Error: s}}
		return map[string]func(w *bytes.Buffer, format string) error{
			"check":   func(w *bytes.Buffer, f string) error { return printFindings(w, f, r, findings) },
			"pods":    func(w *bytes.Buffer, f string) error { return printPods(w, f, pods) },
			"audit":   func(w *bytes.Buffer, f string) error { return printAudit(w, f, audit) },
			"explain": func(w *bytes.Buffer, f string) error { return printExplain(w, f, explanation) },
		}
	}
	harmless := printers("web")
	for name, print := range printers(hostile) {
		t.Run(name, func(t *testing.T) {
			for _, format := range []string{outputTable, outputJSON} {
				var b, plain bytes.Buffer
				if err := print(&b, format); err != nil {
					t.Fatal(err)
				}
				if err := harmless[name](&plain, format); err != nil {
					t.Fatal(err)
				}
				out := b.String()
				if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && unsafe(r) }); i >= 0 || !utf8.ValidString(out) {
					t.Errorf("%s output holds an unsafe character at %d (or invalid UTF-8):\n%q", format, i, out)
				}
				if !strings.Contains(out, `\x1b[2J`) && !strings.Contains(out, `\u001b[2J`) {
					t.Errorf("%s output does not show the escape sequence escaped:\n%s", format, out)
				}
				if n, want := strings.Count(out, "\n"), strings.Count(plain.String(), "\n"); n != want {
					t.Errorf("%s output of %d lines, %d with harmless strings: a newline in the data forged one:\n%s", format, n, want, out)
				}
				if format == outputJSON {
					var back any
					if err := json.Unmarshal(b.Bytes(), &back); err != nil {
						t.Fatalf("JSON: %v", err)
					}
					if want := strings.ToValidUTF8(hostile, "\uFFFD"); !strings.Contains(fmt.Sprint(back), want) {
						t.Errorf("the JSON does not read back as the strings it was given:\n%s", out)
					}
				}
			}
		})
	}
}

// TestKubectlPrinters: -o yaml, jsonpath and go-template print the report
// through cli-runtime's printers, with apiVersion and kind, and what came
// from the cluster without a character a terminal acts on (only newlines
// and tabs, which these formats are made of); -o json reads back.
func TestKubectlPrinters(t *testing.T) {
	rep := CheckReport{Release: release{Name: "m", Namespace: "ns"}, Findings: []Finding{problem(CodeInjector, hostile, "x", "fix")}, Problems: 1}
	for _, tc := range []struct{ format, want string }{
		{"yaml", "kind: CheckReport"},
		{"json", `"apiVersion": "` + reportAPIVersion + `"`},
		{"jsonpath={.findings[0].code} {.findings[0].object}", "MI1007 web"},
		{"go-template={{.kind}} {{(index .findings 0).status}}", "CheckReport problem"},
	} {
		o := newOutputFlags()
		o.format = tc.format
		var b bytes.Buffer
		if err := o.print(&b, "CheckReport", rep, nil); err != nil {
			t.Fatalf("-o %s: %v", tc.format, err)
		}
		out := b.String()
		if !strings.Contains(out, tc.want) {
			t.Errorf("-o %s: output lacks %q:\n%s", tc.format, tc.want, out)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && r != '\t' && unsafe(r) }); i >= 0 || !utf8.ValidString(out) {
			t.Errorf("-o %s: an unsafe character at %d:\n%q", tc.format, i, out)
		}
	}
	o := newOutputFlags()
	o.format = "xml"
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "want one of wide, json, yaml") {
		t.Errorf("-o xml: %v, want a usage error listing the formats", err)
	}
}
