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
	"slices"
	"strconv"
	"strings"
)

// InboundExemption is a range of inbound TCP destination ports the plan's
// inbound chain never sends to the proxy, and why: the comment of the rule
// that decides (or "not captured" where no rule does).
type InboundExemption struct {
	Ports PortRange
	Why   string
}

// InboundCaptured reports whether the plan sends an inbound TCP connection
// to port, arriving on an interface the config does not exclude, to the
// inbound proxy, and the comment of the rule that decides ("" when the
// inbound chain has no rule for it, or no chain at all). It reads the
// rules NewPlan writes (inboundRules), first match wins, as the kernel
// does: a setting's effect on inbound traffic is what the rules do, not
// what the setting's name says (the outbound proxy port is returned
// inbound too).
func (c Config) InboundCaptured(port uint16) (bool, string) {
	for _, r := range inboundRules(c) {
		if !inboundMatch(r.Match, port) {
			continue
		}
		return slices.Contains(r.Target, "REDIRECT"), r.Comment
	}
	return false, ""
}

// InboundNeverCaptured is every inbound TCP destination port that
// InboundCaptured leaves alone, as ranges of one reason each, in port
// order. The RedirectPolicy's CEL refuses a required inbound port in any
// of them; the charts tests compare the two.
func (c Config) InboundNeverCaptured() []InboundExemption {
	var out []InboundExemption
	for p := 1; p <= 65535; p++ {
		captured, why := c.InboundCaptured(uint16(p))
		if captured {
			continue
		}
		if why == "" {
			why = "not captured"
		}
		if n := len(out); n > 0 && out[n-1].Why == why && int(out[n-1].Ports.Last) == p-1 {
			out[n-1].Ports.Last = uint16(p)
			continue
		}
		out = append(out, InboundExemption{PortRange{uint16(p), uint16(p)}, why})
	}
	return out
}

// inboundMatch reports whether an inbound chain rule's match arguments
// match a TCP packet to port on an interface that is not excluded. It
// knows the arguments inboundRules writes, and refuses to guess at any
// other: a rule matching by interface never matches (those interfaces are
// excluded), and an argument it does not know panics, so a new kind of
// rule cannot be misread.
func inboundMatch(match []string, port uint16) bool {
	for i := 0; i < len(match); i++ {
		switch match[i] {
		case "-p":
			i++ // always tcp here
		case "-m":
			i++ // tcp: its --dport follows
		case "-i":
			return false
		case "--dport":
			i++
			first, last, _ := strings.Cut(match[i], ":")
			lo, err1 := strconv.Atoi(first)
			hi, err2 := lo, error(nil)
			if last != "" {
				hi, err2 = strconv.Atoi(last)
			}
			if err1 != nil || err2 != nil {
				panic("inboundMatch: bad --dport " + match[i])
			}
			if int(port) < lo || int(port) > hi {
				return false
			}
		default:
			panic("inboundMatch: an inbound rule argument it does not know: " + match[i])
		}
	}
	return true
}
