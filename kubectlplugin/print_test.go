package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
)

// The tables of each command, as golden files (testdata/*.golden; go test
// -update rewrites them): the columns, the fixes (one command for all it
// fixes) and the summary.
func TestTables(t *testing.T) {
	r := release{Name: "meshinit", Namespace: "meshinit-system"}
	findings := []Finding{
		ok("CustomResourceDefinition redirectpolicies.meshinit.io", "served as meshinit.io/v1alpha1; 2 RedirectPolicies"),
		info("serving certificate", "endpoint 10.0.0.1:9443: i/o timeout"),
		problem("serving certificate", "served by Secret meshinit-system/meshinit-webhook-tls: expired 2 hours ago", "kubectl -n meshinit-system delete secret meshinit-webhook-tls"),
		problem("CA meshinit-webhook-ca", "expired 1 hour ago", "kubectl -n meshinit-system delete secret meshinit-webhook-tls"),
	}
	pods := PodsReport{Problems: 2, Workloads: []WorkloadReport{
		{Namespace: "app", Workload: Workload{"Deployment", "web"}, Fix: "kubectl rollout restart deployment/web -n app", Pods: []PodReport{
			{Name: "web-1-a", State: StateStale, Detail: `--exclude-outbound-ports "" -> "22"`, Problem: true},
			{Name: "web-1-b", State: StateCurrent, Detail: "as the installed configuration injects it"},
		}},
		{Namespace: "app", Workload: Workload{"Pod", "late"}, Fix: "kubectl delete pod late -n app && kubectl apply -f <its manifest>", Pods: []PodReport{
			{Name: "late", State: StateNotInjected, Why: WhyMissing, Detail: "no meshinit-redirect init container", Problem: true},
		}},
	}}
	audit := auditReport([]string{"app/require-8080"}, []AuditResult{
		{Namespace: "app", Kind: "Deployment", Name: "web", Verdict: VerdictRefused, Message: "port 8080 is required by RedirectPolicy app/require-8080"},
		{Namespace: "app", Kind: "Pod", Name: "web-1-a", Workload: "deployment/web", Verdict: VerdictRefused, Message: "port 8080 is required by RedirectPolicy app/require-8080"},
		{Namespace: "app", Kind: "Pod", Name: "late", Workload: "pod/late", Verdict: VerdictAdmitted},
	})
	for name, print := range map[string]func(*bytes.Buffer) error{
		"check": func(b *bytes.Buffer) error { return printFindings(b, outputTable, r, findings) },
		"pods":  func(b *bytes.Buffer) error { return printPods(b, outputTable, pods) },
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
	in := []Finding{problem("x", "a -> b", "fix")}
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
