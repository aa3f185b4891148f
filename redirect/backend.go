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
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// backend is one iptables implementation for one family, named by the
// binaries xtables-nft-multi and xtables-legacy-multi provide. meshinit always
// calls them by these explicit names, never through the "iptables"
// alternatives link, so the backend in use is the one it chose.
type backend struct {
	mode   IptablesMode // IptablesLegacy or IptablesNFT
	family Family
}

func (b backend) binary() string {
	name := "iptables"
	if b.family == IPv6 {
		name = "ip6tables"
	}
	return name + "-" + string(b.mode)
}

func (b backend) save() string    { return b.binary() + "-save" }
func (b backend) restore() string { return b.binary() + "-restore" }

func (b backend) String() string { return fmt.Sprintf("%s %s", b.mode, b.family) }

// backendModes are the two backends, in the order reads are kept.
var backendModes = [2]IptablesMode{IptablesNFT, IptablesLegacy}

// detection is what reading both backends' IPv4 tables found.
type detection struct {
	mode   IptablesMode
	reason string
	// state is the chosen backend's IPv4 state, reused by Apply.
	state tableState
	// otherRules counts the rules the backend not chosen holds.
	otherRules int
	// reads are both backends' IPv4 tables, in backendModes order.
	reads [2]backendRead
}

// detectBackend reads both backends' IPv4 tables and picks one: the
// requested mode if set, else the one holding rules (kube-proxy, CNI or a
// previous meshinit run put them there, and mixing backends in one pod
// confuses everyone), else nft.
func detectBackend(ctx context.Context, run Runner, procNet string, requested IptablesMode) (detection, error) {
	reads, err := readFamily(ctx, run, procNet, IPv4)
	if err != nil {
		return detection{}, err
	}
	det, err := chooseBackend(requested, reads[0], reads[1])
	det.reads = reads
	return det, err
}

// readFamily reads every table of one family from both backends at once,
// in backendModes order. A backend that fails is reported in its read; err
// is set only when it cannot tell whether legacy tables exist. Legacy tables
// are read only when the kernel lists them (see legacyTables); absent, they
// hold no rules.
func readFamily(ctx context.Context, run Runner, procNet string, f Family) (reads [2]backendRead, err error) {
	legacy, err := legacyTables(procNet, f)
	if err != nil {
		return reads, err
	}
	var wg sync.WaitGroup
	for i, m := range backendModes {
		if m == IptablesLegacy && len(legacy) == 0 {
			continue
		}
		b := backend{m, f}
		wg.Go(func() {
			out, err := run.Run(ctx, nil, b.save())
			reads[i] = backendRead{parseSave(string(out)), err}
		})
	}
	wg.Wait()
	return reads, nil
}

// backendRead is one backend's iptables-save of one family, or why it failed.
type backendRead struct {
	state tableState
	err   error
}

// chooseBackend decides the backend from what both backends' tables hold.
func chooseBackend(requested IptablesMode, nft, legacy backendRead) (detection, error) {
	switch requested {
	case IptablesNFT, IptablesLegacy:
		chosen, other := nft, legacy
		if requested == IptablesLegacy {
			chosen, other = legacy, nft
		}
		if chosen.err != nil {
			return detection{}, backendError(backend{requested, IPv4}, chosen.err)
		}
		d := detection{mode: requested, reason: "--iptables-mode=" + string(requested), state: chosen.state}
		if other.err == nil {
			d.otherRules = other.state.ruleCount
		}
		return d, nil
	}
	switch {
	case nft.err != nil && permissionDenied(nft.err):
		return detection{}, backendError(backend{IptablesNFT, IPv4}, nft.err)
	case nft.err != nil && legacy.err != nil:
		return detection{}, fmt.Errorf("no usable iptables: %w; %w", backendError(backend{IptablesNFT, IPv4}, nft.err), backendError(backend{IptablesLegacy, IPv4}, legacy.err))
	case nft.err != nil:
		return detection{mode: IptablesLegacy, reason: "the nft backend is unusable: " + nft.err.Error(), state: legacy.state}, nil
	case legacy.err != nil:
		return detection{mode: IptablesNFT, reason: "the legacy backend is unusable, nft is the default", state: nft.state}, nil
	case legacy.state.ruleCount > nft.state.ruleCount:
		return detection{mode: IptablesLegacy, reason: fmt.Sprintf("legacy tables hold %d rules, nft %d", legacy.state.ruleCount, nft.state.ruleCount), state: legacy.state, otherRules: nft.state.ruleCount}, nil
	case nft.state.ruleCount > 0:
		return detection{mode: IptablesNFT, reason: fmt.Sprintf("nft tables hold %d rules, legacy %d", nft.state.ruleCount, legacy.state.ruleCount), state: nft.state, otherRules: legacy.state.ruleCount}, nil
	default:
		return detection{mode: IptablesNFT, reason: "neither backend holds rules, nft is the default", state: nft.state}, nil
	}
}

func stderrOf(err error) string {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Stderr
	}
	return ""
}

// permissionDenied reports whether iptables failed for lack of privilege,
// which no other backend can fix: iptables said so, or it could not even be
// started (capabilities that do not fit the bounding set, say).
func permissionDenied(err error) bool {
	stderr := stderrOf(err)
	return strings.Contains(stderr, "Permission denied") || strings.Contains(stderr, "Operation not permitted") || strings.Contains(stderr, "must be root") ||
		errors.Is(err, fs.ErrPermission)
}

// backendError turns a failed iptables run into an error that says what is
// wrong and what to do about it.
func backendError(b backend, err error) error {
	stderr := stderrOf(err)
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("%s backend: %s not found on PATH: install iptables (it provides xtables-%s-multi), or choose the other backend with %s: %w", b, b.binary(), b.mode, howToSet(keyIptablesMode), err)
	case permissionDenied(err):
		return fmt.Errorf("%s backend: not permitted to change iptables: the container needs the NET_ADMIN and NET_RAW capabilities; "+
			"as a non-root user the redirector hands iptables only those it holds, from the file capabilities of its image "+
			"(which no_new_privs lets it keep only when the runtime grants them to non-root containers, as containerd and CRI-O do); "+
			"where the node's iptables needs more, set the chart value inject.privileged: %w", b, err)
	case natMissing(stderr):
		table := TableNat
		if strings.Contains(stderr, "raw") {
			table = TableRaw
		}
		return fmt.Errorf("%s backend: the %s table is not available: the node's kernel needs the %s module (or try the %s backend: %s): %w", b, table, tableModule(b, table), otherMode(b.mode), howToSet(keyIptablesMode), err)
	}
	return fmt.Errorf("%s backend: %w", b, err)
}

// natMissing reports whether iptables said the table does not exist
// (its kernel module is not loaded).
func natMissing(stderr string) bool {
	return strings.Contains(stderr, "Table does not exist") || strings.Contains(stderr, "can't initialize")
}

// tableAbsent reports whether a read failed because the backend or its
// table does not exist, so it holds no rules.
func tableAbsent(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || natMissing(stderrOf(err))
}

// tableModule is the kernel module that provides a table (nat or raw) of
// a backend.
func tableModule(b backend, table string) string {
	switch {
	case b.mode == IptablesNFT && table == TableNat:
		return "nft_chain_nat"
	case b.mode == IptablesNFT:
		return "nf_tables"
	case b.family == IPv6:
		return "ip6table_" + table
	}
	return "iptable_" + table
}

func otherMode(m IptablesMode) IptablesMode {
	if m == IptablesNFT {
		return IptablesLegacy
	}
	return IptablesNFT
}

// The redirector's user and group in its image and in the init container
// the webhook builds: not root, and group 0, which may read the kernel's
// list of legacy tables (see legacyTables). The image gives the redirector
// file capabilities for what it needs, NET_ADMIN and NET_RAW.
const (
	RedirectorUID = 65532
	RedirectorGID = 0
)

// legacyTables lists the legacy iptables tables that exist in this network
// namespace. The kernel creates them on first use, and reading a table with
// "iptables-legacy-save -t nat" creates it, so meshinit looks here first
// instead of leaving empty legacy tables behind in every pod. None exist
// when the list is absent (legacy modules not loaded). The kernel lets only
// UID 0 and GID 0 read the list: the redirector cannot tell whether legacy
// rules exist without it, so any other failure is an error.
func legacyTables(procNet string, f Family) ([]string, error) {
	name := "ip_tables_names"
	if f == IPv6 {
		name = "ip6_tables_names"
	}
	data, err := os.ReadFile(filepath.Join(procNet, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot tell whether legacy iptables tables hold rules (%s): run the redirector as UID 0 or with GID 0, which may read that list: %w", f, err)
	}
	return strings.Fields(string(data)), nil
}

// mayHoldRules reports whether b's tables may hold meshinit's rules. It is
// false only for a legacy backend where none of the tables meshinit uses
// exists in this namespace.
func (b backend) mayHoldRules(procNet string) (bool, error) {
	if b.mode != IptablesLegacy {
		return true, nil
	}
	tables, err := legacyTables(procNet, b.family)
	return slices.ContainsFunc(tables, func(t string) bool { return slices.Contains(ownTables, t) }), err
}
