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

package charts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// TestLogFormatRecognised: with inject.logFormat json the webhook's
// container ends its arguments with --log-format=json, and the
// RedirectPolicy's policy, rendered from the same values, recognises it as
// meshinit's; under the other log format the same container is not
// meshinit's (one argument too many, or too few). A pod author cannot
// change the log format of a pod: it is an argument, checked as the others.
// The log format changes only how the redirector logs.
func TestLogFormatRecognised(t *testing.T) {
	required := redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	formats := []string{"text", "json"}
	for i, format := range formats {
		values := map[string]any{"inject": map[string]any{"logFormat": format}}
		in, err := newInjector(values)
		if err != nil {
			t.Fatal(err)
		}
		p := pod("p", injectedBy(in))
		args := redirectContainer(p).Args
		if got, want := args[len(args)-1] == "--log-format=json", format == "json"; got != want {
			t.Errorf("logFormat %s: the webhook's arguments %q end with --log-format=json: %v, want %v", format, args, got, want)
		}
		if denied := compile(t, chartPolicy(t, values)).denials(t, request{object: p, namespace: inNamespace, params: required}); len(denied) > 0 {
			t.Errorf("logFormat %s: the webhook's own container denied %q", format, denied)
		}
		other := formats[1-i]
		otherValues := map[string]any{"inject": map[string]any{"logFormat": other}}
		denied := compile(t, chartPolicy(t, otherValues)).denials(t, request{object: p, namespace: inNamespace, params: required})
		want := fmt.Sprintf("init container meshinit-redirect is not meshinit's: it has %d arguments, not %d", len(args), len(args)+map[string]int{"text": 1, "json": -1}[format])
		if len(denied) == 0 || !strings.HasPrefix(denied[0], want) {
			t.Errorf("the container of logFormat %s under a chart with logFormat %s: denied %q, want first %q...", format, other, denied, want)
		}
	}
}
