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

package redirect_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshinit/meshinit/redirect"
)

func TestApplyTwiceIsANoOp(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			args := []string{"--ipv6=on", "--exclude-inbound-ports=22", "--capture-dns=all", "--exclude-outbound-uids=2000"}
			p.mustApply(args...)
			var first [2]string
			for i, v6 := range []bool{false, true} {
				first[i] = p.save(v6, "")
				if !strings.Contains(first[i], ":MESHINIT_DNS_OUTPUT") {
					t.Fatalf("no DNS conntrack zones in raw (ipv6=%v):\n%s", v6, first[i])
				}
			}
			// An init container restarted after container GC runs apply again.
			p.mustApply(args...)
			for i, v6 := range []bool{false, true} {
				if got := p.save(v6, ""); got != first[i] {
					t.Errorf("second apply changed the tables (ipv6=%v):\n%s\nwas:\n%s", v6, got, first[i])
				}
			}
		})
	}
}

func TestApplyDifferentConfigReplaces(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8081)
			p.mustApply("--ipv6=off", "--exclude-inbound-ports=8081", "--capture-dns=all")
			expect(t, "before: excluded port", p.ask(p.peerNS, 0, 0, hostPort(p.podIP, 8081)), "app-8081")
			p.mustApply("--ipv6=off", "--include-outbound-cidrs=")
			expect(t, "after: port no longer excluded", p.ask(p.peerNS, 0, 0, hostPort(p.podIP, 8081)), "proxy-inbound orig="+hostPort(p.podIP, 8081))
			nat := p.save(false, "nat")
			if strings.Contains(nat, "8081") || strings.Contains(nat, "MESHINIT_OUTPUT") || strings.Contains(nat, "MESHINIT_DNS") {
				t.Errorf("old rules left behind after a new config:\n%s", nat)
			}
			if raw := p.save(false, "raw"); strings.Contains(raw, "MESHINIT") {
				t.Errorf("old DNS conntrack zones left behind after a config without DNS capture:\n%s", raw)
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
			p.iptables(false, "-t", "nat", "-A", "OUTPUT", "-p", "icmp", "-d", "192.0.2.1", "-j", "RETURN")
			p.iptables(false, "-t", "nat", "-A", "POSTROUTING", "-d", "192.0.2.1", "-j", "RETURN")
			p.iptables(false, "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "DROP")
			p.iptables(false, "-t", "raw", "-N", "FOREIGN_RAW")
			p.iptables(false, "-t", "raw", "-A", "FOREIGN_RAW", "-p", "tcp", "--dport", "7", "-j", "CT", "--zone", "9")
			p.iptables(false, "-t", "raw", "-A", "OUTPUT", "-p", "tcp", "-j", "FOREIGN_RAW")
			before := p.save(false, "")
			p.mustApply("--ipv6=on", "--capture-dns=all")
			if all := p.save(false, ""); !strings.Contains(all, ":MESHINIT_OUTPUT") || !strings.Contains(all, ":MESHINIT_DNS_OUTPUT") {
				t.Fatalf("apply wrote no meshinit rules in nat and raw:\n%s", all)
			}
			if out, err := p.redirector(nil, "cleanup"); err != nil {
				t.Fatalf("cleanup: %v\n%s", err, out)
			}
			if after := p.save(false, ""); after != before {
				t.Errorf("cleanup did not restore the tables exactly:\n%s\nbefore apply:\n%s", after, before)
			}
			if all6 := p.save(true, ""); strings.Contains(all6, "MESHINIT") {
				t.Errorf("cleanup left IPv6 rules:\n%s", all6)
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
			out, err := p.redirector([]string{path}, "apply", "--iptables-mode="+mode, "--ipv6=on", "--capture-dns=all")
			if err == nil {
				t.Fatalf("apply succeeded despite the injected failure:\n%s", out)
			}
			if !strings.Contains(out, "injected failure") || !strings.Contains(out, "rolled back") {
				t.Errorf("output does not report the failure and the rollback:\n%s", out)
			}
			p.noMeshinitRules(t)
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
	if !strings.Contains(out, `"IPv6 decided" action=redirected`) || !strings.Contains(p.save(true, "nat"), "MESHINIT_INBOUND") {
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

// slowRestore puts on PATH an ip6tables-<mode>-restore that touches marker
// and then hangs, so an apply with IPv6 stops after IPv4 is in place.
func slowRestore(t *testing.T, mode, marker string) string {
	return fakeTool(t, "ip6tables-"+mode+"-restore", "touch "+marker+"\nexec sleep 60\n")
}

// TestSIGTERMMidApplyRollsBack sends SIGTERM (what the kubelet sends a
// container it stops) while the second family is being applied: the
// redirector exits non-zero, and the first family's rules are really gone,
// as its log says.
func TestSIGTERMMidApplyRollsBack(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			marker := filepath.Join(t.TempDir(), "ipv6-restore-started")
			cmd := exec.Command("ip", "netns", "exec", p.name, redirectorBin, "apply", "--iptables-mode="+mode, "--ipv6=on")
			cmd.Env = append(os.Environ(), slowRestore(t, mode, marker))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, marker, cmd, &out)
			if nat := p.save(false, "nat"); !strings.Contains(nat, "MESHINIT_OUTPUT") {
				t.Fatalf("IPv4 rules not in place while IPv6 is applied, nothing to roll back:\n%s", nat)
			}
			began := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			t.Logf("exited %v %s after SIGTERM", err, time.Since(began).Round(time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit code %d after SIGTERM, want 1", code)
			}
			for _, want := range []string{"stopped by a signal", "rolled back: no meshinit rules left"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			p.noMeshinitRules(t)
		})
	}
}

// TestTimeout: an apply that hangs past --timeout is stopped, rolled back,
// and says the deadline passed.
func TestTimeout(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			path := slowRestore(t, mode, filepath.Join(t.TempDir(), "started"))
			began := time.Now()
			out, err := p.redirector([]string{path}, "apply", "--iptables-mode="+mode, "--ipv6=on", "--timeout=1s")
			took := time.Since(began)
			if err == nil {
				t.Fatalf("apply succeeded despite hanging:\n%s", out)
			}
			// Not before the deadline, and stopped by it rather than by the
			// fake restore's end (sleep 60); how long the rollback after it
			// takes is the machine's.
			if took < time.Second || took >= 60*time.Second {
				t.Errorf("apply took %s with --timeout=1s and a restore hanging 60s", took)
			}
			for _, want := range []string{"the deadline passed (--timeout=1s)", "rolled back: no meshinit rules left"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			p.noMeshinitRules(t)
		})
	}
	t.Run("must be positive", func(t *testing.T) {
		p := newPod(t, "nft")
		out, err := p.redirector(nil, "apply", "--timeout=0s")
		if err == nil || !strings.Contains(out, "invalid --timeout 0s: must be positive") {
			t.Errorf("want --timeout=0s refused, got %v:\n%s", err, out)
		}
		p.noMeshinitRules(t)
	})
	t.Run("not a redirect setting", func(t *testing.T) {
		c, err := redirect.ParseArgs(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range c.Args() {
			if strings.HasPrefix(a, "--timeout") {
				t.Errorf("the webhook would render %s", a)
			}
		}
		if _, err := redirect.ParseArgs([]string{"--timeout=1s"}); err == nil {
			t.Error("redirect settings accept --timeout")
		}
	})
}

// waitFor waits until file exists; if it does not within 20 s, it stops cmd
// and fails t with cmd's output.
func waitFor(t *testing.T, file string, cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			return
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("%s never appeared:\n%s", file, out)
}
