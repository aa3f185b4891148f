package redirect_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyTwiceIsANoOp(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.mustApply("--ipv6=on", "--exclude-inbound-ports=22")
			first4, first6 := p.save(false, "nat"), p.save(true, "nat")
			// An init container restarted after container GC runs apply again.
			p.mustApply("--ipv6=on", "--exclude-inbound-ports=22")
			if got := p.save(false, "nat"); got != first4 {
				t.Errorf("second apply changed the IPv4 nat table:\n%s\nwas:\n%s", got, first4)
			}
			if got := p.save(true, "nat"); got != first6 {
				t.Errorf("second apply changed the IPv6 nat table:\n%s\nwas:\n%s", got, first6)
			}
		})
	}
}

func TestApplyDifferentConfigReplaces(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8081)
			p.mustApply("--ipv6=off", "--exclude-inbound-ports=8081")
			expect(t, "before: excluded port", p.ask(p.peerNS, 0, 0, hostPort(p.podIP, 8081)), "app-8081")
			p.mustApply("--ipv6=off", "--include-outbound-cidrs=")
			expect(t, "after: port no longer excluded", p.ask(p.peerNS, 0, 0, hostPort(p.podIP, 8081)), "proxy-inbound orig="+hostPort(p.podIP, 8081))
			nat := p.save(false, "nat")
			if strings.Contains(nat, "8081") || strings.Contains(nat, "MESHINIT_OUTPUT") {
				t.Errorf("old rules left behind after a new config:\n%s", nat)
			}
			if n := strings.Count(nat, "-j MESHINIT_INBOUND"); n != 1 {
				t.Errorf("%d jumps into MESHINIT_INBOUND, want 1:\n%s", n, nat)
			}
		})
	}
}

func TestCleanupLeavesOthersAlone(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.iptables(false, "-t", "nat", "-N", "FOREIGN")
			p.iptables(false, "-t", "nat", "-A", "FOREIGN", "-p", "tcp", "--dport", "7", "-j", "RETURN")
			p.iptables(false, "-t", "nat", "-A", "PREROUTING", "-p", "udp", "-j", "FOREIGN")
			p.iptables(false, "-t", "nat", "-A", "OUTPUT", "-p", "udp", "-d", "192.0.2.1", "-j", "RETURN")
			p.iptables(false, "-t", "nat", "-A", "POSTROUTING", "-d", "192.0.2.1", "-j", "RETURN")
			p.iptables(false, "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "DROP")
			before := p.save(false, "")
			p.mustApply("--ipv6=on")
			if nat := p.save(false, "nat"); !strings.Contains(nat, "MESHINIT_") {
				t.Fatalf("apply wrote no meshinit rules:\n%s", nat)
			}
			if out, err := p.redirector(nil, "cleanup"); err != nil {
				t.Fatalf("cleanup: %v\n%s", err, out)
			}
			if after := p.save(false, ""); after != before {
				t.Errorf("cleanup did not restore the tables exactly:\n%s\nbefore apply:\n%s", after, before)
			}
			if nat6 := p.save(true, "nat"); strings.Contains(nat6, "MESHINIT") {
				t.Errorf("cleanup left IPv6 rules:\n%s", nat6)
			}
		})
	}
}

// fakeTool writes an executable script named name into a new directory and
// returns "PATH=<dir>:$PATH", so the redirector runs it instead of the real one.
func fakeTool(t *testing.T, name, script string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return "PATH=" + dir + ":" + os.Getenv("PATH")
}

func TestFailureLeavesNoPartialRuleset(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode+"/ipv6 restore fails after ipv4 succeeded", func(t *testing.T) {
			p := newPod(t, mode)
			path := fakeTool(t, "ip6tables-"+mode+"-restore", "cat >/dev/null; echo 'injected failure' >&2; exit 1\n")
			out, err := p.redirector([]string{path}, "apply", "--iptables-mode="+mode, "--ipv6=on")
			if err == nil {
				t.Fatalf("apply succeeded despite the injected failure:\n%s", out)
			}
			if !strings.Contains(out, "injected failure") || !strings.Contains(out, "rolled back") {
				t.Errorf("output does not report the failure and the rollback:\n%s", out)
			}
			for _, v6 := range []bool{false, true} {
				if nat := p.save(v6, "nat"); strings.Contains(nat, "MESHINIT") {
					t.Errorf("meshinit rules left after a failed apply (ipv6=%v):\n%s", v6, nat)
				}
			}
		})
		t.Run(mode+"/a rule fails mid-restore", func(t *testing.T) {
			p := newPod(t, mode)
			p.iptables(false, "-t", "nat", "-A", "POSTROUTING", "-d", "192.0.2.1", "-j", "RETURN")
			before := p.save(false, "nat")
			// Corrupt the last rule before COMMIT, then hand the script to the real restore.
			real := "iptables-" + mode + "-restore"
			path := fakeTool(t, real, "sed 's/^COMMIT$/-A MESHINIT_OUTPUT -j NO_SUCH_TARGET\\nCOMMIT/' | /usr/sbin/"+real+" \"$@\"\n")
			out, err := p.redirector([]string{path}, "apply", "--iptables-mode="+mode, "--ipv6=off")
			if err == nil || !strings.Contains(out, "NO_SUCH_TARGET") {
				t.Fatalf("apply did not fail for the corrupt rule: %v\n%s", err, out)
			}
			if after := p.save(false, "nat"); after != before {
				t.Errorf("a failed restore changed the nat table:\n%s\nbefore:\n%s", after, before)
			}
		})
	}
}

func TestBackendDetection(t *testing.T) {
	for _, tc := range []struct {
		existing, want string
	}{
		{"", "nft"},
		{"legacy", "legacy"},
		{"nft", "nft"},
	} {
		t.Run("existing="+tc.existing, func(t *testing.T) {
			p := newPod(t, tc.want)
			if tc.existing != "" {
				p.mode = tc.existing
				p.iptables(false, "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "ACCEPT")
				p.mode = tc.want
			}
			out, err := p.redirector(nil, "apply", "--ipv6=off")
			if err != nil {
				t.Fatalf("apply: %v\n%s", err, out)
			}
			if !strings.Contains(out, "backend="+tc.want) {
				t.Errorf("log does not say backend=%s:\n%s", tc.want, out)
			}
			if !strings.Contains(p.save(false, "nat"), "MESHINIT_INBOUND") {
				t.Errorf("rules are not in the %s backend", tc.want)
			}
		})
	}
}

func TestIPv6Auto(t *testing.T) {
	p := newPod(t, "nft")
	out := p.mustApply() // the pod has a global IPv6 address (fd31::/64)
	if !strings.Contains(out, "IPv6 rules will be applied") || !strings.Contains(p.save(true, "nat"), "MESHINIT_INBOUND") {
		t.Errorf("ipv6=auto did not program ip6tables in a pod with a global IPv6 address:\n%s", out)
	}
}

func TestActionableErrors(t *testing.T) {
	p := newPod(t, "nft")
	t.Run("no NET_ADMIN", func(t *testing.T) {
		out, err := p.redirectorCmd("setpriv", "--inh-caps=-all", "--bounding-set=-net_admin,-net_raw", redirectorBin, "apply", "--ipv6=off")
		if err == nil || !strings.Contains(out, "NET_ADMIN") {
			t.Errorf("want an error naming NET_ADMIN, got %v:\n%s", err, out)
		}
	})
	t.Run("no iptables binary", func(t *testing.T) {
		dir := t.TempDir()
		out, err := p.redirector([]string{"PATH=" + dir}, "apply", "--ipv6=off")
		if err == nil || !strings.Contains(out, "not found on PATH") || !strings.Contains(out, "install iptables") {
			t.Errorf("want an error saying iptables is missing and what to do, got %v:\n%s", err, out)
		}
	})
	t.Run("invalid flag value", func(t *testing.T) {
		out, err := p.redirector(nil, "apply", "--exclude-inbound-ports=80-")
		if err == nil || !strings.Contains(out, "exclude-inbound-ports") || !strings.Contains(out, "80-") {
			t.Errorf("want an error naming the flag and value, got %v:\n%s", err, out)
		}
		if strings.Contains(p.save(false, "nat"), "MESHINIT") {
			t.Error("rules written despite invalid flags")
		}
	})
}
