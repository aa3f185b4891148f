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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options are how Apply and Cleanup reach the system.
type Options struct {
	// Runner runs the iptables binaries. Default ExecRunner.
	Runner Runner
	// Logger receives one line per decision. Default discards.
	Logger *slog.Logger
	// ProcNet is where the kernel lists the namespace's IPv6 addresses
	// (if_inet6) and legacy iptables tables (ip_tables_names). Default /proc/net.
	ProcNet string
	// ResolvConf is the pod's resolver configuration, whose nameservers
	// ReadPlan reads under capture-dns=nameservers. Default /etc/resolv.conf.
	ResolvConf string
}

func (o *Options) setDefaults() {
	if o.Runner == nil {
		o.Runner = ExecRunner{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.ProcNet == "" {
		o.ProcNet = "/proc/net"
	}
	if o.ResolvConf == "" {
		o.ResolvConf = "/etc/resolv.conf"
	}
}

// Apply makes the current network namespace's tables (nat, and raw for DNS
// capture) hold exactly the plan's rules, replacing any earlier meshinit
// rules and leaving everything else alone. It first reads both backends'
// tables of every family it programs and changes nothing when rules of
// another owner would take the traffic (see findConflicts). Each family's
// tables are replaced by one iptables-restore and then read back, the two
// families side by side; if anything fails, or ctx ends, meshinit's rules
// are removed from both families with a context of their own
// (RollbackTimeout), so the pod never runs with half a ruleset. Applying
// the same plan again is a no-op.
//
// IPv4 is always programmed. IPv6 is programmed whenever the kernel has
// IPv6 (see decideIPv6), whether or not the pod has an IPv6 address yet: the
// redirect, or under --ipv6=off its refusal (closedRuleset), so an address
// added later opens no route around the proxy. It returns what it did for
// each family, for the log and the init container's termination message.
func Apply(ctx context.Context, plan Plan, opts Options) ([]Outcome, error) {
	opts.setDefaults()
	log := opts.Logger
	if err := plan.Config.Validate(); err != nil {
		return nil, err
	}
	// The families are independent: their tables are read, and then
	// written and checked, side by side. Each step waits for an iptables
	// program, and a default pod's apply is little else.
	families := []Ruleset{plan.IPv4}
	v6 := decideIPv6(plan.Config.IPv6, filepath.Join(opts.ProcNet, "if_inet6"))
	outcomes := []Outcome{{Family: IPv4, Action: ActionRedirected, Reason: "IPv4 is always programmed"}, v6}
	var v6reads [2]backendRead
	var v6err error
	var reading sync.WaitGroup
	if v6.Action != ActionNone {
		families = append(families, *plan.ipv6())
		reading.Go(func() { v6reads, v6err = readFamily(ctx, opts.Runner, opts.ProcNet, IPv6) })
	}
	det, err := detectBackend(ctx, opts.Runner, opts.ProcNet, plan.Config.IptablesMode)
	reading.Wait()
	if err != nil {
		return nil, err
	}
	log.Info("iptables backend chosen", "backend", det.mode, "reason", det.reason)
	if det.otherRules > 0 && plan.Config.IptablesMode != IptablesAuto {
		log.Warn("the other iptables backend also holds rules; both apply to packets, which is confusing to debug",
			"other", otherMode(det.mode), "rules", det.otherRules)
	}
	log.Info("IPv6 decided", "action", v6.Action, "reason", v6.Reason)
	if v6err != nil {
		return nil, v6err
	}
	states, err := survey(opts, det, families, v6reads, plan.Config.CaptureDNS != DNSCaptureOff)
	if err != nil {
		return nil, err
	}

	afters := make([]tableState, len(families))
	errs := make([]error, len(families))
	var applying sync.WaitGroup
	for i, rs := range families {
		applying.Go(func() {
			afters[i], errs[i] = applyRuleset(ctx, opts.Runner, backend{det.mode, rs.Family}, states[i], rs)
		})
	}
	applying.Wait()
	// Both have ended, so the rollback races no restore.
	if err := errors.Join(errs...); err != nil {
		return nil, rollback(ctx, opts, det.mode, err)
	}
	for i, rs := range families {
		o := &outcomes[i]
		o.Backend = backend{det.mode, rs.Family}.String()
		for _, t := range rs.Tables {
			o.Chains, o.Rules = o.Chains+len(t.Chains), o.Rules+len(t.Rules)
		}
		log.Info("rules in place", "backend", o.Backend, "version", afters[i].version, "action", o.Action, "chains", o.Chains, "rules", o.Rules)
	}
	return outcomes, nil
}

// survey returns the chosen backend's state of every family to be
// programmed, from both backends' reads of it (IPv4's by detectBackend,
// IPv6's v6reads), or an error when rules of another owner are in the way
// (of TCP, and of UDP too when dns: see findConflicts). A backend other
// than the chosen one that cannot be read is unusable here, so it holds no
// rules.
func survey(opts Options, det detection, families []Ruleset, v6reads [2]backendRead, dns bool) ([]tableState, error) {
	chosen := slices.Index(backendModes[:], det.mode)
	var states []tableState
	var found []conflict
	for _, rs := range families {
		reads := det.reads
		if rs.Family == IPv6 {
			reads = v6reads
		}
		if err := reads[chosen].err; err != nil {
			return nil, backendError(backend{det.mode, rs.Family}, err)
		}
		states = append(states, reads[chosen].state)
		for i, r := range reads {
			b := backend{backendModes[i], rs.Family}
			if r.err != nil {
				opts.Logger.Info("not looking for rules in the way in an unusable backend", "backend", b.String(), "reason", r.err)
				continue
			}
			found = append(found, findConflicts(b, r.state, dns, rs.closed())...)
		}
	}
	for _, c := range found {
		opts.Logger.Error("rule of another owner in the way", "backend", c.backend.String(), "table", c.rule.table, "rule", c.rule.line, "why", c.why)
	}
	if len(found) > 0 {
		return nil, conflictError(found)
	}
	return states, nil
}

// RollbackTimeout bounds the removal of meshinit's rules after a failed
// apply. It runs with a context of its own, so it also runs after the
// apply's context ended (SIGTERM, --timeout).
const RollbackTimeout = 10 * time.Second

// rollback removes meshinit's rules from mode's tables after cause, and
// says so only when it did.
func rollback(ctx context.Context, opts Options, mode IptablesMode, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RollbackTimeout)
	defer cancel()
	if err := cleanupMode(ctx, opts, mode); err != nil {
		opts.Logger.Error("rollback failed: meshinit rules may be left", "backend", mode, "error", err)
		return fmt.Errorf("%w; removing the rules already applied also failed: %w", cause, err)
	}
	opts.Logger.Info("rolled back: no meshinit rules left after the failure", "backend", mode)
	return cause
}

// applyRuleset replaces meshinit's rules in one family's tables, whose
// state was read before, and checks the result, which it returns.
func applyRuleset(ctx context.Context, run Runner, b backend, state tableState, rs Ruleset) (tableState, error) {
	if err := restore(ctx, run, b, restoreScript(state, rs)); err != nil {
		return tableState{}, err
	}
	after, err := readTables(ctx, run, b)
	if err != nil {
		return tableState{}, err
	}
	if !after.matches(rs) {
		var found []string
		for _, t := range ownTables {
			found = append(found, after.footprint(t).lines...)
		}
		return tableState{}, fmt.Errorf("%s backend: after iptables-restore the tables do not hold the planned rules; found:\n%s", b, strings.Join(found, "\n"))
	}
	return after, nil
}

// readTables reads every table of one backend and family. A legacy table
// is read only when it exists: iptables-legacy-save without -t reads those
// the kernel lists, and creates none.
func readTables(ctx context.Context, run Runner, b backend) (tableState, error) {
	out, err := run.Run(ctx, nil, b.save())
	if err != nil {
		return tableState{}, backendError(b, err)
	}
	return parseSave(string(out)), nil
}

func restore(ctx context.Context, run Runner, b backend, script string) error {
	if _, err := run.Run(ctx, []byte(script), b.restore(), "--noflush", "--wait"); err != nil {
		return backendError(b, fmt.Errorf("restoring the tables: %w", err))
	}
	return nil
}

// Cleanup removes meshinit's chains and the jumps into them from both
// backends and both families, and nothing else.
func Cleanup(ctx context.Context, opts Options) error {
	opts.setDefaults()
	var errs []error
	for _, m := range backendModes {
		errs = append(errs, cleanupMode(ctx, opts, m))
	}
	return joinErrors(errs)
}

// cleanupMode removes meshinit's rules from one backend's two families, in
// every table it uses. A family whose binary is missing, or (legacy) none
// of whose tables meshinit uses exists, holds no meshinit rules, so it is
// skipped; any other failure to read it is an error, since it may hold them.
func cleanupMode(ctx context.Context, opts Options, mode IptablesMode) error {
	var errs []error
	run, log := opts.Runner, opts.Logger
	for _, f := range []Family{IPv4, IPv6} {
		b := backend{mode, f}
		if may, err := b.mayHoldRules(opts.ProcNet); err != nil || !may {
			errs = append(errs, err)
			continue
		}
		st, err := readTables(ctx, run, b)
		if err != nil && tableAbsent(err) {
			log.Debug("skipping cleanup", "backend", b.String(), "reason", err)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		chains, jumps := st.count()
		if chains == 0 && jumps == 0 {
			continue
		}
		if err := restore(ctx, run, b, restoreScript(st, Ruleset{Family: f})); err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("removed meshinit rules", "backend", b.String(), "chains", chains, "jumps", jumps)
	}
	return joinErrors(errs)
}

// decideIPv6 decides what Apply programs for IPv6, and why, from the mode
// and /proc/net/if_inet6 (ifInet6Path), which exists when the kernel has
// IPv6. Not programming IPv6 is safe only when no IPv6 address can ever
// come: a pod without one when its init container runs may get one later
// (SLAAC, a late CNI step), and IPv6 TCP would then go around the proxy.
// So a kernel with IPv6 always gets IPv6 rules: under on and auto the
// redirect (inert until an address comes, then taking its traffic to the
// proxy), under off its refusal. Only a kernel without IPv6, where no
// address can come, gets none; --ipv6=on then fails in ip6tables, as asked.
// A file that exists but cannot be read counts as IPv6: it fails closed.
func decideIPv6(mode IPv6Mode, ifInet6Path string) Outcome {
	o := Outcome{Family: IPv6, Action: ActionRedirected}
	if mode == IPv6On {
		o.Reason = "--ipv6=on"
		return o
	}
	if mode == IPv6Off {
		o.Action = ActionRefused
	}
	f, err := os.Open(ifInet6Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Outcome{Family: IPv6, Action: ActionNone,
			Reason: fmt.Sprintf("--ipv6=%s and the kernel has no IPv6 (no %s): no IPv6 address can come later, so there is nothing to redirect or refuse", mode, ifInet6Path)}
	case err != nil:
		o.Reason = "cannot read " + ifInet6Path + " (" + err.Error() + "), so the kernel may have IPv6"
	default:
		defer f.Close()
		if iface, ok := globalIPv6Interface(f); ok {
			o.Reason = "the kernel has IPv6 and interface " + iface + " a global IPv6 address"
		} else {
			o.Reason = "the kernel has IPv6, though no interface has a global IPv6 address yet: the rules also cover one added later"
		}
	}
	if mode == IPv6Off {
		o.Reason = "--ipv6=off: IPv6 is not redirected, and new IPv6 connections the redirect would take to a proxy are refused, since " + o.Reason
	} else {
		o.Reason = "--ipv6=auto and " + o.Reason
	}
	return o
}

// globalIPv6Interface scans /proc/net/if_inet6 lines
// ("addr ifindex prefixlen scope flags name") for a global-scope (00) address
// on an interface other than lo.
func globalIPv6Interface(r io.Reader) (string, bool) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) == 6 && f[3] == "00" && f[5] != "lo" {
			return f[5], true
		}
	}
	return "", false
}
