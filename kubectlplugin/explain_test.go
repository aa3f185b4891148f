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
	"strings"
	"testing"

	"github.com/meshinit/meshinit/initimage"
	"github.com/meshinit/meshinit/webhook"
)

// redirectorPrint is what `redirector print` prints for an init
// container's arguments (apply's flags).
func redirectorPrint(t *testing.T, args []string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := initimage.Main(context.Background(), append([]string{"print"}, args[1:]...), &out, &errOut); code != 0 {
		t.Fatalf("redirector print %q: exit %d: %s", args[1:], code, errOut.String())
	}
	return out.String()
}

// TestExplain: explain's rules are exactly what `redirector print` prints
// for the arguments the pod's init container runs with (and, when it is
// stale or missing, for those the installed configuration gives it); a pod
// left alone has none.
func TestExplain(t *testing.T) {
	before := parseConfig(t, "image: redirector:1\n")
	after := parseConfig(t, "image: redirector:1\nredirect: {exclude-outbound-ports: \"22\"}\n")
	pod := injectedBy(t, appPod("web", annotated("traffic.meshinit.io/exclude-inbound-ports", "8081")), enabled, before)

	current := explain(pod, enabled, before, owners{})
	if current.State != StateCurrent || current.Running == nil || current.Wanted != nil || current.Fix != "" {
		t.Fatalf("current pod: %+v", current)
	}
	if got, want := current.Running.Rules, redirectorPrint(t, current.Running.Args); got != want {
		t.Errorf("rules:\n%s\nwant redirector print's:\n%s", got, want)
	}
	if !strings.Contains(strings.Join(current.Running.Args, " "), "--exclude-inbound-ports=8081") ||
		current.Annotations["traffic.meshinit.io/exclude-inbound-ports"] != "8081" {
		t.Errorf("the annotation's setting: args %q, annotations %v", current.Running.Args, current.Annotations)
	}

	stale := explain(pod, enabled, after, owners{})
	if stale.State != StateStale || stale.Running == nil || stale.Wanted == nil || stale.Fix != "kubectl delete pod web -n app && kubectl apply -f <its manifest>" {
		t.Fatalf("stale pod: %+v", stale)
	}
	if stale.Running.Fingerprint == stale.Wanted.Fingerprint || !strings.Contains(stale.Wanted.Rules, "--dport 22 ") {
		t.Errorf("stale pod: running %s, wanted %s; want the wanted rules to let port 22 out:\n%s", stale.Running.Fingerprint, stale.Wanted.Fingerprint, stale.Wanted.Rules)
	}
	if got, want := stale.Wanted.Rules, redirectorPrint(t, stale.Wanted.Args); got != want {
		t.Errorf("wanted rules:\n%s\nwant redirector print's:\n%s", got, want)
	}

	missing := explain(appPod("late"), enabled, before, owners{})
	if missing.Why != WhyMissing || missing.Running != nil || missing.Wanted == nil || missing.Wanted.Error != "" {
		t.Errorf("missing: %+v", missing)
	}
	optedOut := explain(appPod("out", labelled(webhook.PodLabel, "false")), enabled, before, owners{})
	if optedOut.Running != nil || optedOut.Wanted != nil || optedOut.Problem {
		t.Errorf("opted out: %+v", optedOut)
	}
}

func TestRedirectOf(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		error string
	}{
		{[]string{"sh", "-c", "true"}, `do not start with "apply"`},
		{nil, `do not start with "apply"`},
		{[]string{"apply", "--inbound-proxy-port=0"}, "--inbound-proxy-port"},
		{[]string{"apply", "--no-such-flag"}, "no-such-flag"},
	} {
		r := redirectOf(tc.args)
		if !strings.Contains(r.Error, tc.error) || r.Rules != "" {
			t.Errorf("%q: error %q, rules %q; want an error containing %q", tc.args, r.Error, r.Rules, tc.error)
		}
	}
}
