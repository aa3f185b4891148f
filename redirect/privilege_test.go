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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/meshinit/meshinit/internal/images/oci"
)

// asContainerEnv, set to "uid:gid", makes the test binary start as
// execAsContainer instead of running tests.
const asContainerEnv = "MESHINIT_TEST_AS_CONTAINER"

// execAsContainer does to this process what runc does before it starts the
// init container as the webhook configures it (runAsUser 65532, runAsGroup
// 0, capabilities drop ALL add NET_ADMIN and NET_RAW, allowPrivilegeEscalation
// false), then executes argv: the bounding set only NET_ADMIN and NET_RAW;
// the user and group, no supplementary groups; NET_ADMIN and NET_RAW
// permitted and effective, nothing inheritable or ambient; no_new_privs.
// Capabilities and no_new_privs are per thread: everything happens on the
// one thread that then calls execve.
func execAsContainer(ids string, argv []string) {
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "as container: %s: %v\n", what, err)
		os.Exit(126)
	}
	var uid, gid int
	if _, err := fmt.Sscanf(ids, "%d:%d", &uid, &gid); err != nil {
		fail(asContainerEnv+"="+ids, err)
	}
	runtime.LockOSThread()
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if c == unix.CAP_NET_ADMIN || c == unix.CAP_NET_RAW {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL { // EINVAL: not in this kernel
			fail("dropping capability from the bounding set", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		fail("keepcaps", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		fail("setgroups", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		fail("setresgid", err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		fail("setresuid", err)
	}
	net := uint32(1<<unix.CAP_NET_ADMIN | 1<<unix.CAP_NET_RAW)
	data := [2]unix.CapUserData{{Effective: net, Permitted: net}}
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		fail("capset", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("no_new_privs", err)
	}
	fail("exec "+argv[0], syscall.Exec(argv[0], argv, os.Environ()))
}

// imageLike is a directory a non-root user may enter, holding a copy of the
// redirector with the file capabilities the image gives it
// (cap_net_admin,cap_net_raw+p) and one without, and a lock file for the
// legacy backend like the image's /run/xtables.lock (root's, 0644), which
// XTABLES_LOCKFILE points at instead of the host's.
type imageLike struct {
	withCaps, withoutCaps string
	env                   []string
}

func newImageLike(t *testing.T) imageLike {
	t.Helper()
	dir, err := os.MkdirTemp("", "meshinit-least-privilege-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Flags&unix.ST_NOSUID != 0 {
		t.Fatalf("%s is on a nosuid mount, where the kernel ignores file capabilities: set TMPDIR to another file system", dir)
	}
	im := imageLike{withCaps: filepath.Join(dir, "redirector"), withoutCaps: filepath.Join(dir, "redirector-without-caps")}
	bin, err := os.ReadFile(redirectorBin)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "xtables.lock")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{im.withCaps, bin, 0o755}, {im.withoutCaps, bin, 0o755}, {lock, nil, 0o644}} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	caps := oci.FileCapabilities(false, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW)
	if err := unix.Setxattr(im.withCaps, oci.XattrCapability, []byte(caps), 0); err != nil {
		t.Fatal(err)
	}
	im.env = []string{"XTABLES_LOCKFILE=" + lock}
	return im
}

// asContainer runs bin with args in the pod's network namespace as the
// init container would run it (see execAsContainer), as uid:gid.
func (p *pod) asContainer(im imageLike, bin, ids string, args ...string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.name, self, bin}, args...)...)
	cmd.Env = append(append(os.Environ(), asContainerEnv+"="+ids), im.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLeastPrivilege runs the real redirector as the init container runs by
// default: UID 65532, GID 0, only NET_ADMIN and NET_RAW, no_new_privs, with
// the image's file capabilities. It programs both backends (choosing legacy
// by itself where legacy tables hold rules, which needs GID 0 to see) and
// both families, nat and raw (DNS capture), real connections and DNS go to
// the proxies, and cleanup works too.
// Without the file capabilities, or without GID 0 where legacy tables
// exist, it fails and says why.
func TestLeastPrivilege(t *testing.T) {
	im := newImageLike(t)
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8080)
			p.startDNS(proxyUID, proxyUID, 15053)
			// A rule of the backend under test, outside nat: auto mode
			// must choose that backend.
			p.iptables(false, "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "ACCEPT")
			out, err := p.asContainer(im, im.withCaps, "65532:0", "apply", "--ipv6=on", "--capture-dns=all")
			if err != nil {
				t.Fatalf("apply as 65532:0: %v\n%s", err, out)
			}
			for _, want := range []string{`uid=65532 gid=0 "capabilities for iptables"="[NET_ADMIN NET_RAW]"`, "backend=" + mode} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %q:\n%s", want, out)
				}
			}
			for _, fam := range []struct{ pod, peer string }{{p.podIP, p.peerIP}, {p.podIP6, p.peerIP6}} {
				expect(t, "inbound", p.ask(p.peerNS, 0, 0, hostPort(fam.pod, 8080)), "proxy-inbound orig="+hostPort(fam.pod, 8080))
				expect(t, "outbound", p.ask(p.podNS, appUID, appUID, hostPort(fam.peer, 9090)), "proxy-outbound orig="+hostPort(fam.peer, 9090))
				expect(t, "DNS", p.client(appUID, appUID, "dns-udp", hostPort(fam.peer, 53)), "dns-proxy")
			}
			if out, err := p.asContainer(im, im.withCaps, "65532:0", "cleanup"); err != nil {
				t.Fatalf("cleanup as 65532:0: %v\n%s", err, out)
			}
			p.noMeshinitRules(t)
		})
	}
	t.Run("without file capabilities", func(t *testing.T) {
		p := newPod(t, "nft")
		out, err := p.asContainer(im, im.withoutCaps, "65532:0", "apply", "--ipv6=off")
		if err == nil || !strings.Contains(out, `"capabilities for iptables"=[]`) || !strings.Contains(out, "not permitted to change iptables") {
			t.Errorf("want apply refused for lack of capabilities, got %v:\n%s", err, out)
		}
		p.noMeshinitRules(t)
	})
	t.Run("legacy tables unreadable without GID 0", func(t *testing.T) {
		p := newPod(t, "legacy")
		p.iptables(false, "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "ACCEPT")
		out, err := p.asContainer(im, im.withCaps, "65532:65532", "apply", "--ipv6=off")
		if err == nil || !strings.Contains(out, "cannot tell whether legacy iptables tables hold rules") {
			t.Errorf("want apply refused, saying legacy tables cannot be seen, got %v:\n%s", err, out)
		}
		p.noMeshinitRules(t)
	})
}
