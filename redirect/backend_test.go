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

package redirect

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestChooseBackend(t *testing.T) {
	rules := func(n int) backendRead { return backendRead{state: tableState{ruleCount: n}} }
	failed := func(stderr string) backendRead {
		return backendRead{err: &CommandError{Command: "x", Stderr: stderr, Err: errors.New("exit status 1")}}
	}
	missing := backendRead{err: exec.ErrNotFound}
	for _, tc := range []struct {
		name          string
		requested     IptablesMode
		nft, legacy   backendRead
		want, wantErr string
	}{
		{"empty namespace", IptablesAuto, rules(0), rules(0), "nft", ""},
		{"legacy holds rules", IptablesAuto, rules(0), rules(3), "legacy", ""},
		{"nft holds rules", IptablesAuto, rules(5), rules(0), "nft", ""},
		{"more in nft", IptablesAuto, rules(5), rules(2), "nft", ""},
		{"forced legacy", IptablesLegacy, rules(5), rules(0), "legacy", ""},
		{"forced nft", IptablesNFT, rules(0), rules(5), "nft", ""},
		{"nft binary missing", IptablesAuto, missing, rules(0), "legacy", ""},
		{"nft kernel support missing", IptablesAuto, failed("Protocol not supported"), rules(0), "legacy", ""},
		{"no privilege", IptablesAuto, failed("Permission denied (you must be root)"), rules(0), "", "NET_ADMIN"},
		{"both missing", IptablesAuto, missing, missing, "", "not found on PATH"},
		{"forced backend missing", IptablesLegacy, rules(0), missing, "", "iptables-legacy not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := chooseBackend(tc.requested, tc.nft, tc.legacy)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(d.mode) != tc.want || d.reason == "" {
				t.Fatalf("chose %q (%q), %v; want %q with a reason", d.mode, d.reason, err, tc.want)
			}
		})
	}
}

// TestErrorsNameWhatAPodCanSet: an injected pod's redirector runs with the
// flags its injector gives it, so the fixes its errors suggest are the pod
// annotations and chart values that set those flags.
func TestErrorsNameWhatAPodCanSet(t *testing.T) {
	for key, want := range map[string]string{
		keyIptablesMode:         "the chart value inject.redirect.iptables-mode (--iptables-mode)",
		keyExcludeOutboundPorts: "the pod annotation " + AnnotationExcludeOutboundPorts + " or the chart value inject.redirect.exclude-outbound-ports (--exclude-outbound-ports)",
	} {
		if got := howToSet(key); got != want {
			t.Errorf("howToSet(%q) = %q, want %q", key, got, want)
		}
	}
	err := backendError(backend{IptablesNFT, IPv4}, &exec.Error{Name: "iptables-nft-restore", Err: exec.ErrNotFound})
	if msg := err.Error(); !strings.Contains(msg, "the chart value inject.redirect.iptables-mode") {
		t.Errorf("iptables not found: %q names no chart value", msg)
	}
}
