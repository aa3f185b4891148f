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

package initimage

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/redirect"
)

// TestLogsNamePod: with the environment variables the injectors set from
// the downward API (redirect.PodEnv), every line the redirector logs, text
// or JSON, carries the pod's namespace, name and UID; without them, none.
// The commands fail before touching iptables (a bad setting, a bad
// --timeout), so the test needs no network namespace.
func TestLogsNamePod(t *testing.T) {
	pod := map[string]string{"namespace": "team-a", "pod": "web-0", "podUID": "0b7d2c8e-6f0a-4a51-9c3e-1b2d3e4f5a6b"}
	runs := [][]string{
		{"apply", "--exclude-outbound-ports=x"},
		{"cleanup", "--timeout=0s"},
	}
	for _, format := range []string{"text", "json"} {
		for _, withEnv := range []bool{true, false} {
			for _, e := range redirect.PodEnv {
				v := ""
				if withEnv {
					v = pod[e.Attr]
				}
				t.Setenv(e.Name, v)
			}
			for _, run := range runs {
				args := append(append([]string{}, run...), "--log-format="+format)
				if run[0] == "apply" {
					args = append(args, "--termination-message-path="+filepath.Join(t.TempDir(), "message"))
				}
				var stdout, stderr bytes.Buffer
				if code := Main(context.Background(), args, &stdout, &stderr); code != 1 {
					t.Fatalf("redirector %v: exit code %d, want 1; stderr:\n%s", args, code, stderr.String())
				}
				lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
				if len(lines) == 0 || lines[0] == "" {
					t.Fatalf("redirector %v logged nothing", args)
				}
				for _, line := range lines {
					got := attrs(t, format, line)
					for attr, want := range pod {
						if v, ok := got[attr]; withEnv && v != want || !withEnv && ok {
							t.Errorf("redirector %v (pod env set: %v) logged %q: %s=%q, want %q", args, withEnv, line, attr, v, map[bool]string{true: want}[withEnv])
						}
					}
				}
			}
		}
	}
}

// attrs reads the string attributes of one log line of format.
func attrs(t *testing.T, format, line string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if format == "json" {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	// slog's text handler: key=value, values with spaces quoted.
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// TestPodEnvOnlyLabelsLogs answers, for the env the injectors give
// meshinit's container: can a pod author use it to take traffic around the
// proxy? No. The rules the redirector programs are the same whatever the
// variables hold (even values written as its flags); the injectors set
// them from the downward API only, and the RedirectPolicy's policy refuses a
// meshinit-redirect with any other env (charts' TestMeshinitContainer).
func TestPodEnvOnlyLabelsLogs(t *testing.T) {
	print := func() string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{"print", "--exclude-outbound-ports=22", "--ipv6=on"}, &stdout, &stderr); code != 0 {
			t.Fatalf("redirector print: exit %d: %s", code, stderr.String())
		}
		return stdout.String()
	}
	for _, e := range redirect.PodEnv {
		t.Setenv(e.Name, "")
	}
	want := print()
	for _, e := range redirect.PodEnv {
		t.Setenv(e.Name, "--exclude-outbound-cidrs=0.0.0.0/0 --include-inbound-ports= -j RETURN")
	}
	if got := print(); got != want {
		t.Errorf("with the pod env set to flags, redirector print printed:\n%s\nwant what it prints without:\n%s", got, want)
	}
}
