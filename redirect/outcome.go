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
	"fmt"
	"strings"
)

// Action is what Apply did for one family.
type Action string

const (
	// ActionRedirected: the family's redirect is in place.
	ActionRedirected Action = "redirected"
	// ActionRefused: the family is not redirected (--ipv6=off), and new
	// connections the redirect would take to a proxy are refused
	// (closedRuleset).
	ActionRefused Action = "refused"
	// ActionNone: nothing programmed, since the kernel has no such family.
	ActionNone Action = "not programmed"
)

// Outcome is what Apply did for one family and why: the log says it, and
// the redirector writes every family's into the init container's
// termination message, where `kubectl describe pod` shows it.
type Outcome struct {
	Family Family
	Action Action
	// Reason says why: the mode and what the kernel offered.
	Reason string
	// Backend, Chains and Rules say what is in place ("nft IPv6", 3, 16);
	// empty under ActionNone.
	Backend       string
	Chains, Rules int
}

func (o Outcome) String() string {
	if o.Action == ActionNone {
		return fmt.Sprintf("%s: %s (%s)", o.Family, o.Action, o.Reason)
	}
	return fmt.Sprintf("%s: %s, %d chains and %d rules in %s (%s)", o.Family, o.Action, o.Chains, o.Rules, o.Backend, o.Reason)
}

// Summary is the outcomes one line each, as the termination message holds them.
func Summary(outcomes []Outcome) string {
	var b strings.Builder
	for _, o := range outcomes {
		b.WriteString(o.String() + "\n")
	}
	return b.String()
}
