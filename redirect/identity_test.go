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

// Real-kernel tests of the claims the RedirectPolicy's container rules rest
// on (charts/meshinit/templates/policy-containers.tpl,
// docs/attackers-checklist.md): which routes to the proxy's identity, and
// past netfilter, a container's process has, with the real rules in a real
// network namespace. Each "container" is this test binary, started as runc
// starts a container's process (its user, groups, capability sets and
// no_new_privs on one thread, then execve), executing a copy of itself that
// connects to the peer: "peer-9090" is an answer from around the proxy,
// "proxy-outbound ..." one through it.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/meshinit/meshinit/internal/images/oci"
	"github.com/meshinit/meshinit/internal/testproxy"
)

// runtimeDefaultCaps is the capability set containerd gives a container
// that neither adds nor drops any (pkg/oci defaultUnixCaps, the same in
// 1.6, 1.7 and 2.x): its bounding, permitted and effective sets before the
// container's process is executed.
var runtimeDefaultCaps = []int{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FSETID, unix.CAP_FOWNER, unix.CAP_MKNOD, unix.CAP_NET_RAW,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETFCAP, unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE,
	unix.CAP_SYS_CHROOT, unix.CAP_KILL, unix.CAP_AUDIT_WRITE,
}

// processEnv, set to a JSON processSpec, makes the test binary start as
// execAsProcess; identityClientEnv makes it run identityClient.
const (
	processEnv        = "MESHINIT_TEST_AS_PROCESS"
	identityClientEnv = "MESHINIT_TEST_IDENTITY_CLIENT"
)

// processSpec is how a container's process starts: runc sets the user,
// groups and capabilities (bounding, permitted and effective; nothing
// inheritable or ambient) and no_new_privs (allowPrivilegeEscalation:
// false), then executes the container's command, Exec.
type processSpec struct {
	UID, GID   int
	Groups     []int
	Caps       []int
	NoNewPrivs bool
	Exec       string
}

// execAsProcess does to this process what runc does (see processSpec) and
// executes spec.Exec with the same environment but processEnv. Capabilities and
// no_new_privs are per thread: everything happens on the one thread that
// then calls execve.
func execAsProcess(spec string) {
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "as process: %s: %v\n", what, err)
		os.Exit(126)
	}
	var s processSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fail(processEnv, err)
	}
	runtime.LockOSThread()
	var set uint64
	for _, c := range s.Caps {
		set |= 1 << c
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if set&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			fail("dropping capability from the bounding set", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		fail("keepcaps", err)
	}
	if err := syscall.Setgroups(s.Groups); err != nil {
		fail("setgroups", err)
	}
	if err := syscall.Setresgid(s.GID, s.GID, s.GID); err != nil {
		fail("setresgid", err)
	}
	if err := syscall.Setresuid(s.UID, s.UID, s.UID); err != nil {
		fail("setresuid", err)
	}
	data := [2]unix.CapUserData{{Effective: uint32(set), Permitted: uint32(set)}, {Effective: uint32(set >> 32), Permitted: uint32(set >> 32)}}
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		fail("capset", err)
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fail("no_new_privs", err)
		}
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, processEnv+"=") {
			env = append(env, e)
		}
	}
	err := syscall.Exec(s.Exec, []string{s.Exec}, env)
	if err == syscall.EPERM {
		// The kernel refuses to execute a program whose file
		// capabilities are effective but cannot all be granted: the
		// container does not start.
		fmt.Println("refused: execve:", err)
		os.Exit(0)
	}
	fail("exec "+s.Exec, err)
}

// identityClient is the container's command: "ask ADDR" connects to ADDR
// and prints the answer; "setuid UID ADDR" first tries to become UID (as a
// process with CAP_SETUID may), then asks; "rawsyn ..." sends a TCP SYN
// from an AF_PACKET socket (sendRawSYN). It prints "refused: ..." where the
// kernel refuses the attempt, and always exits 0 once it has said what
// happened.
func identityClient(spec string) int {
	f := strings.Fields(spec)
	say := func(format string, a ...any) int { fmt.Printf(format+"\n", a...); return 0 }
	switch f[0] {
	case "setuid":
		uid, _ := strconv.Atoi(f[1])
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return say("refused: setresuid(%d): %v", uid, err)
		}
		f = []string{"ask", f[2]}
	case "rawsyn":
		if err := sendRawSYN(f[1:]); err != nil {
			return say("refused: %v", err)
		}
		return say("sent")
	}
	line, err := testproxy.Ask(func() (net.Conn, error) { return net.Dial("tcp", f[1]) })
	if err != nil {
		return say("refused: %v", err)
	}
	return say("%s", line)
}

// copyOfSelf writes a copy of this test binary into a directory anyone may
// enter, owned by uid:gid with mode (setuid and setgid bits included) and,
// unless fileCaps is empty, with those file capabilities, effective.
func copyOfSelf(t *testing.T, uid, gid int, mode os.FileMode, fileCaps ...uint) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "meshinit-identity-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Flags&unix.ST_NOSUID != 0 {
		t.Fatalf("%s is on a nosuid mount, where the kernel ignores setuid bits and file capabilities: set TMPDIR to another file system", dir)
	}
	path := filepath.Join(dir, "container")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	// chmod after chown: chown clears the setuid and setgid bits.
	if err := errorsJoin(os.Chmod(dir, 0o755), os.Chmod(path, mode)); err != nil {
		t.Fatal(err)
	}
	if len(fileCaps) > 0 {
		if err := unix.Setxattr(path, oci.XattrCapability, []byte(oci.FileCapabilities(true, fileCaps...)), 0); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// runAsProcess runs spec's process in the pod's network namespace with the
// client command and returns what it printed.
func (p *pod) runAsProcess(spec processSpec, command string) string {
	p.t.Helper()
	self, err := os.Executable()
	if err != nil {
		p.t.Fatal(err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", p.name, self)
	cmd.Env = append(os.Environ(), processEnv+"="+string(js), identityClientEnv+"="+command)
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("running %+v: %v\n%s", spec, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestIdentityRoutes: with the real rules (the proxy's UID and GID 1337,
// the chart's defaults), which containers' connections go around the
// proxy. The pod's own UID and GID (4000, as the policy requires them
// explicit) never do; a supplementary group of the proxy's (fsGroup,
// supplementalGroups, the image's /etc/group) does not either, since the
// rules match the primary GID only. A setgid or setuid executable of the
// proxy's does, unless no_new_privs (allowPrivilegeEscalation: false). The
// runtime's default capabilities do, for root and, through file
// capabilities on the container's command, for any UID even under
// no_new_privs (the kernel grants file capabilities up to the permitted
// set runc gave the process): only capabilities.drop: [ALL] closes that
// (the kernel then refuses to execute the command at all).
func TestIdentityRoutes(t *testing.T) {
	const podID = 4000
	plain := copyOfSelf(t, 0, 0, 0o755)
	setgid := copyOfSelf(t, 0, proxyUID, os.ModeSetgid|0o755)
	setuid := copyOfSelf(t, proxyUID, 0, os.ModeSetuid|0o755)
	fileCaps := copyOfSelf(t, 0, 0, 0o755, unix.CAP_SETUID, unix.CAP_SETGID)
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers()
			p.mustApply("--ipv6=off")
			peer := hostPort(p.peerIP, 9090)
			through := "proxy-outbound orig=" + peer
			for _, tc := range []struct {
				name    string
				spec    processSpec
				command string
				want    string
			}{
				{"the pod's UID and GID", processSpec{UID: podID, GID: podID, NoNewPrivs: true, Exec: plain}, "ask " + peer, through},
				{"a supplementary group of the proxy's", processSpec{UID: podID, GID: podID, Groups: []int{proxyUID}, NoNewPrivs: true, Exec: plain}, "ask " + peer, through},
				{"a setgid executable of the proxy's group", processSpec{UID: podID, GID: podID, Exec: setgid}, "ask " + peer, "peer-9090"},
				{"a setgid executable under no_new_privs", processSpec{UID: podID, GID: podID, NoNewPrivs: true, Exec: setgid}, "ask " + peer, through},
				{"a setuid executable of the proxy's", processSpec{UID: podID, GID: podID, Exec: setuid}, "ask " + peer, "peer-9090"},
				{"a setuid executable under no_new_privs", processSpec{UID: podID, GID: podID, NoNewPrivs: true, Exec: setuid}, "ask " + peer, through},
				{"root with the runtime's default capabilities", processSpec{Caps: runtimeDefaultCaps, NoNewPrivs: true, Exec: plain},
					fmt.Sprintf("setuid %d %s", proxyUID, peer), "peer-9090"},
				{"root with every capability dropped", processSpec{NoNewPrivs: true, Exec: plain},
					fmt.Sprintf("setuid %d %s", proxyUID, peer), "refused: setresuid(1337): operation not permitted"},
				{"a UID of its own, file capabilities on its command, default capabilities, no_new_privs",
					processSpec{UID: podID, GID: podID, Caps: runtimeDefaultCaps, NoNewPrivs: true, Exec: fileCaps},
					fmt.Sprintf("setuid %d %s", proxyUID, peer), "peer-9090"},
				{"the same with every capability dropped",
					processSpec{UID: podID, GID: podID, NoNewPrivs: true, Exec: fileCaps},
					fmt.Sprintf("setuid %d %s", proxyUID, peer), "refused: execve: operation not permitted"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := p.runAsProcess(tc.spec, tc.command); got != tc.want {
						t.Errorf("answered %q, want %q", got, tc.want)
					}
				})
			}
		})
	}
}

// TestRawPacketsAroundTheRules: a process with NET_RAW (root's default
// capabilities in containerd) sends a TCP SYN to a peer from an AF_PACKET
// socket: the frame leaves the pod without meeting netfilter, while a
// connect() to the same peer is redirected to the proxy and never reaches
// it. With every capability dropped the socket is refused. (The peer counts
// SYNs to its port 9092 in its raw table.)
func TestRawPacketsAroundTheRules(t *testing.T) {
	plain := copyOfSelf(t, 0, 0, 0o755)
	p := newPod(t, "nft")
	p.startServers()
	p.mustApply("--ipv6=off")
	counter := []string{"PREROUTING", "-p", "tcp", "--dport", "9092", "--tcp-flags", "SYN,ACK", "SYN"}
	if out, err := exec.Command("ip", append([]string{"netns", "exec", p.peer, "iptables-nft", "-t", "raw", "-A"}, counter...)...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	syns := func() int {
		out, err := exec.Command("ip", "netns", "exec", p.peer, "iptables-nft-save", "-c", "-t", "raw").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for l := range strings.Lines(string(out)) {
			if strings.Contains(l, "--dport 9092") {
				var n int
				fmt.Sscanf(l, "[%d:", &n)
				return n
			}
		}
		t.Fatalf("no counter in\n%s", out)
		return 0
	}
	podLink, peerLink := vethOf(t, p.name), vethOf(t, p.peer)
	raw := fmt.Sprintf("rawsyn %s %s %s %s 9092", podLink.name, peerLink.mac, p.podIP, p.peerIP)

	if got := p.runAsProcess(processSpec{UID: 4000, GID: 4000, NoNewPrivs: true, Exec: plain}, "ask "+hostPort(p.peerIP, 9092)); !strings.HasPrefix(got, "proxy-outbound") {
		t.Errorf("connect() to the peer's 9092 answered %q, want the proxy", got)
	}
	if n := syns(); n != 0 {
		t.Fatalf("the peer counted %d SYNs from a connect() the rules redirect", n)
	}
	if got := p.runAsProcess(processSpec{NoNewPrivs: true, Exec: plain}, raw); !strings.HasPrefix(got, "refused: ") {
		t.Errorf("with every capability dropped: %q, want refused", got)
	}
	if got := p.runAsProcess(processSpec{Caps: runtimeDefaultCaps, NoNewPrivs: true, Exec: plain}, raw); got != "sent" {
		t.Fatalf("with the runtime's default capabilities: %q", got)
	}
	if n := syns(); n != 1 {
		t.Errorf("the peer counted %d SYNs from the AF_PACKET socket, want 1", n)
	}
}

// link is a network interface's name and hardware address.
type link struct{ name, mac string }

// vethOf returns the veth in network namespace ns (newPod gives each one).
func vethOf(t *testing.T, ns string) link {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "type", "veth").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		t.Fatalf("no veth in %s: %s", ns, out)
	}
	name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
	for i, w := range f {
		if w == "link/ether" && i+1 < len(f) {
			return link{name, f[i+1]}
		}
	}
	t.Fatalf("no hardware address in %s", out)
	return link{}
}

// sendRawSYN sends one TCP SYN, IPv4, from an AF_PACKET socket on the
// interface named: args are the interface, the destination's hardware
// address, the source and destination addresses and the destination port.
func sendRawSYN(args []string) error {
	ifi, err := net.InterfaceByName(args[0])
	if err != nil {
		return err
	}
	dstMAC, err := net.ParseMAC(args[1])
	if err != nil {
		return err
	}
	src, dst := net.ParseIP(args[2]).To4(), net.ParseIP(args[3]).To4()
	port, _ := strconv.Atoi(args[4])
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_IP)))
	if err != nil {
		return fmt.Errorf("socket(AF_PACKET): %w", err)
	}
	defer unix.Close(fd)

	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], uint16(port))
	binary.BigEndian.PutUint32(tcp[4:], 1)
	tcp[12] = 5 << 4 // header length
	tcp[13] = 0x02   // SYN
	binary.BigEndian.PutUint16(tcp[14:], 64240)
	pseudo := append(append(append([]byte{}, src...), dst...), 0, unix.IPPROTO_TCP, 0, 20)
	binary.BigEndian.PutUint16(tcp[16:], checksum(append(pseudo, tcp...)))

	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 40)
	ip[8] = 64
	ip[9] = unix.IPPROTO_TCP
	copy(ip[12:], src)
	copy(ip[16:], dst)
	binary.BigEndian.PutUint16(ip[10:], checksum(ip))

	frame := append(append(append(append([]byte{}, dstMAC...), ifi.HardwareAddr...), 0x08, 0x00), append(ip, tcp...)...)
	addr := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifi.Index, Halen: 6}
	copy(addr.Addr[:], dstMAC)
	return unix.Sendto(fd, frame, 0, addr)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// checksum is the Internet checksum (RFC 1071).
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
