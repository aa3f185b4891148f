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
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCommandLine: what the command takes, without a cluster: usage
// errors exit 2 saying what is wrong, version prints Version.
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		output string
	}{
		{[]string{"version", "--client"}, 0, Version + "\n"},
		{[]string{"explain"}, 2, "error: explain takes one pod name, got []"},
		{[]string{"check", "extra"}, 2, `error: check takes no arguments, got ["extra"]`},
		{[]string{"pods", "--no-such-flag"}, 2, "error: unknown flag: --no-such-flag"},
		{[]string{"nonsense"}, 2, `error: unknown command "nonsense"`},
		{[]string{"check", "-o", "xml"}, 2, `error: --output="xml": want one of wide, json, yaml`},
		{[]string{"check", "--pre", "--injector", "sidecar"}, 2, `error: --injector="sidecar": want webhook or policy`},
		{[]string{"completion", "bash"}, 0, "bash completion"},
		{[]string{"completion", "zsh"}, 0, "#compdef"},
		{[]string{"completion", "fish"}, 0, "complete -c kubectl-meshinit"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut, &options{now: time.Now, dial: dialTLS})
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.output) {
			t.Errorf("kubectl meshinit %q: exit %d, output %q%q; want %d and %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.output)
		}
	}
}

// TestConnectionErrorsExit1: the exit codes are those docs/operations.md
// and the command's help give: a cluster that cannot be read (the API
// server unreachable, a kubeconfig that does not exist or does not parse)
// exits 1, as a problem found does (nothing shows that all is well), saying
// why; 2 is only for a command line the command does not take. Each
// command that reads the cluster does so.
func TestConnectionErrorsExit1(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.kubeconfig"
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: [this is not a cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: connection refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "https://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name, output string
		flags        []string
	}{
		{"the API server unreachable", "connection refused", []string{"--server", unreachable, "--insecure-skip-tls-verify", "--request-timeout", "5s"}},
		{"no kubeconfig file", "no such file", []string{"--kubeconfig", dir + "/missing.kubeconfig"}},
		{"a kubeconfig that does not parse", "bad.kubeconfig", []string{"--kubeconfig", bad}},
	} {
		for _, cmd := range [][]string{{"check"}, {"check", "--pre"}, {"pods", "-A"}, {"version"}} {
			args := append(append([]string{}, cmd...), tc.flags...)
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, &out, &errOut, &options{now: time.Now, dial: dialTLS})
			if code != exitProblem || !strings.HasPrefix(errOut.String(), "error: ") || !strings.Contains(errOut.String(), tc.output) {
				t.Errorf("%s: kubectl meshinit %q: exit %d, stderr %q; want exit %d and an error containing %q", tc.name, args, code, errOut.String(), exitProblem, tc.output)
			}
		}
	}
}
