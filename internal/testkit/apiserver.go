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

package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// assetsUnset is why tests against an API server skip without one.
const assetsUnset = "KUBEBUILDER_ASSETS is unset: no kube-apiserver, etcd and kubectl to test against (make tools-envtest builds them; make test sets it)"

// NeedAPIServer skips t, saying why, unless KUBEBUILDER_ASSETS names the
// binaries of an API server. [StartAPIServer] and [Shared.Get] call it.
func NeedAPIServer(t testing.TB) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip(assetsUnset)
	}
}

// NeedRoot skips t unless it runs as root; why says what for ("to create
// network namespaces").
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root %s (make test runs as root, as CI does)", why)
	}
}

// Options say how to start an API server.
//
// The API server runs with its default admission plugins, as a cluster's
// does (envtest turns the ServiceAccount plugin off; the kit turns it back
// on): meshinit's injectors must hold against the plugins that change a pod
// after them, and a test kit that turns one off hides exactly that. The
// ServiceAccount plugin needs each namespace's default ServiceAccount, so
// the kit runs kube-controller-manager's serviceaccount controller beside
// the API server, the one that makes them in a cluster (see [Namespace]).
type Options struct {
	// Flags are extra kube-apiserver flags, each "name=value"
	// ("admission-control-config-file=/path",
	// "enable-admission-plugins=AlwaysPullImages"). Default none.
	Flags []string
	// AuditPolicy, when set, is an audit policy (YAML) the API server logs
	// by, to [APIServer.AuditLog]. Default no audit log.
	AuditPolicy string
}

// An APIServer is a kube-apiserver and etcd started by envtest, and an admin
// (group system:masters) to use them.
type APIServer struct {
	// Config is the admin's REST config. Change a copy (rest.CopyConfig).
	Config *rest.Config
	// Kubeconfig is a kubeconfig file with the admin's credentials, for
	// kubectl, Helm and client-go's clientcmd.
	Kubeconfig string
	// AuditLog is the audit log's path when Options.AuditPolicy is set.
	AuditLog string
	// Minor is the API server's minor version (37 for v1.37.2): which
	// Kubernetes the binaries in KUBEBUILDER_ASSETS are, for the tests
	// whose expectations depend on it.
	Minor int

	env         *envtest.Environment
	dir         string    // the files the kit writes, removed by stop
	log         *os.File  // kube-apiserver's output, in dir
	pid         int       // kube-apiserver's process
	kubectl     string    // its path
	controllers *exec.Cmd // kube-controller-manager, serviceaccount controller only
	reaper      *reaper   // stops them if the test process ends first
}

// StartAPIServer starts an API server for t alone, stopped when t ends; it
// skips t without the binaries (NeedAPIServer).
func StartAPIServer(t testing.TB, opts Options) *APIServer {
	t.Helper()
	NeedAPIServer(t)
	s, err := start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping kube-apiserver and etcd: %v", err)
		}
	})
	return s
}

func start(opts Options) (_ *APIServer, err error) {
	s := &APIServer{env: &envtest.Environment{}}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		// envtest's 20s is too short for a kube-apiserver starting beside
		// others on two busy cores (the certs package's failed 5 times in
		// a row at load 17), and a start that takes longer is not a failure
		// of what the tests check.
		s.env.ControlPlaneStartTimeout = 2 * time.Minute
	}
	if s.dir, err = os.MkdirTemp("", "meshinit-apiserver-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(s.dir)
		}
	}()
	args := s.env.ControlPlane.GetAPIServer().Configure()
	args.Set("disable-admission-plugins", "") // envtest's default: ServiceAccount
	for _, f := range opts.Flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("kube-apiserver flag %q: want name=value", f)
		}
		args.Set(name, value)
	}
	if opts.AuditPolicy != "" {
		policy := filepath.Join(s.dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(opts.AuditPolicy), 0o600); err != nil {
			return nil, err
		}
		s.AuditLog = filepath.Join(s.dir, "audit.log")
		args.Set("audit-policy-file", policy).Set("audit-log-path", s.AuditLog)
	}
	// The server's output goes to a file, so that when it dies mid-package
	// the tests can say how instead of "connection refused" (crashed).
	if s.log, err = os.Create(filepath.Join(s.dir, "kube-apiserver.log")); err != nil {
		return nil, err
	}
	if os.Getenv("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT") != "true" { // envtest's own switch
		s.env.ControlPlane.GetAPIServer().Out, s.env.ControlPlane.GetAPIServer().Err = s.log, s.log
	}
	if _, err := s.env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	admin, err := s.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, unthrottled())
	if err == nil {
		err = s.writeKubeconfig(admin)
	}
	if err != nil {
		return nil, errors.Join(err, s.stop())
	}
	s.Config = rest.CopyConfig(admin.Config())
	if s.Minor, err = minorVersion(s.Config); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	if err := s.startServiceAccounts(); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	if err := s.startReaper(); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	return s, nil
}

// startReaper starts the reaper (reaper.go) of etcd, kube-apiserver and
// kube-controller-manager, and of their files.
func (s *APIServer) startReaper() error {
	cp := s.env.ControlPlane
	pids := []int{s.controllers.Process.Pid}
	for _, arg := range []string{"--data-dir=" + cp.Etcd.DataDir, "--cert-dir=" + cp.APIServer.CertDir} {
		found, err := childrenWith(arg)
		if err != nil {
			return fmt.Errorf("finding the process started with %s: %w", arg, err)
		}
		if len(found) != 1 {
			return fmt.Errorf("finding the process started with %s: found %v, want one", arg, found)
		}
		pids = append(pids, found[0])
	}
	s.pid = pids[len(pids)-1] // kube-apiserver's, found last
	// envtest's webhook serving certificates too (a directory Start makes
	// even with no webhook to install, which only Stop removes).
	dirs := []string{cp.Etcd.DataDir, cp.APIServer.CertDir, s.dir}
	if d := s.env.WebhookInstallOptions.LocalServingCertDir; d != "" {
		dirs = append(dirs, d)
	}
	r, err := startReaper(pids, dirs)
	s.reaper = r
	return err
}

// startServiceAccounts runs kube-controller-manager with only its
// serviceaccount controller, which gives every namespace its default
// ServiceAccount. The binary is the one in KUBEBUILDER_ASSETS (make
// tools-envtest builds it; the matrix versions link the pinned one's).
func (s *APIServer) startServiceAccounts() error {
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the ServiceAccount admission plugin needs the serviceaccount controller: %w (make tools-envtest builds kube-controller-manager)", err)
	}
	s.controllers = exec.Command(bin, "--kubeconfig="+s.Kubeconfig, "--controllers=serviceaccount",
		"--leader-elect=false", "--secure-port=0")
	log, err := os.Create(filepath.Join(s.dir, "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	s.controllers.Stdout, s.controllers.Stderr = log, log
	if err := s.controllers.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	return nil
}

// minorVersion asks the API server for its minor version.
func minorVersion(cfg *rest.Config) (int, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return 0, fmt.Errorf("reading the API server's version: %w", err)
	}
	minor, err := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	if err != nil {
		return 0, fmt.Errorf("the API server's minor version %q: %w", v.Minor, err)
	}
	return minor, nil
}

func (s *APIServer) writeKubeconfig(admin *envtest.AuthenticatedUser) error {
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	s.Kubeconfig = filepath.Join(s.dir, "kubeconfig")
	if err := os.WriteFile(s.Kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	kubectl, err := admin.Kubectl()
	if err != nil {
		return err
	}
	s.kubectl = kubectl.Path
	return nil
}

// crashed says how the API server ended when it has ended before stop
// (crashReason); nil while it runs.
func (s *APIServer) crashed() error {
	if s.pid == 0 || running(s.pid) {
		return nil
	}
	log, err := os.ReadFile(s.log.Name())
	if err != nil {
		return fmt.Errorf("kube-apiserver exited during the tests (its log: %w)", err)
	}
	return fmt.Errorf("kube-apiserver exited during the tests: %s", crashReason(string(log)))
}

// crashReason is why a Go program's log says it ended: the line of a Go
// "fatal error:" or "panic:", and the functions of the goroutine it ended
// in, innermost first, the runtime's left out; else the log's last lines.
func crashReason(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "fatal error: ") && !strings.HasPrefix(l, "panic: ") {
			continue
		}
		// Then "goroutine N [running]:" and its frames, each a function
		// line and its file and line indented, up to a blank line.
		var frames []string
		for _, f := range lines[i+1:] {
			if f == "" && len(frames) > 0 || len(frames) == 4 {
				break
			}
			// The arguments' parenthesis is the last: a method's receiver
			// has its own.
			args := strings.LastIndexByte(f, '(')
			if args > 0 && !strings.HasPrefix(f, "\t") && !strings.HasPrefix(f, "goroutine ") && !strings.HasPrefix(f, "panic(") &&
				!strings.HasPrefix(f, "runtime.") && !strings.HasPrefix(f, "internal/runtime") {
				frames = append(frames, f[:args])
			}
		}
		return l + " in " + strings.Join(frames, " < ")
	}
	if strings.TrimSpace(log) == "" {
		return "its log is empty"
	}
	return "the end of its log:\n" + strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// running says whether process pid, a child of this one, has not exited
// (a pid reused by another process is not this child).
func running(pid int) bool {
	state, ppid, ok := procStat(pid)
	return ok && state != "Z" && state != "X" && ppid == os.Getpid()
}

// stop stops everything start started and removes its files, but for the
// API server's log when the server crashed (the error says where it is).
func (s *APIServer) stop() error {
	crash := s.crashed()
	s.reaper.stop()
	if s.controllers != nil && s.controllers.Process != nil {
		_ = s.controllers.Process.Kill()
		_ = s.controllers.Wait() // killed: its exit status says nothing
	}
	stopErr := s.env.Stop()
	if s.log != nil {
		_ = s.log.Close()
	}
	if crash != nil {
		kept := filepath.Join(os.TempDir(), fmt.Sprintf("meshinit-kube-apiserver-%d.log", s.pid))
		if err := os.Rename(s.log.Name(), kept); err != nil {
			return errors.Join(crash, err, stopErr, os.RemoveAll(s.dir))
		}
		return errors.Join(fmt.Errorf("%w; its log is kept at %s", crash, kept), stopErr, os.RemoveAll(s.dir))
	}
	return errors.Join(stopErr, os.RemoveAll(s.dir))
}

// unthrottled is the base of every REST config the kit hands out: no
// client-side rate limit worth the name, as envtest.Environment's own config
// (QPS 1000, burst 2000). Without it client-go limits each API group's
// client to 5 requests a second (burst 10), and a test that creates pods
// and the pod templates of seven workload kinds waits on its own client,
// not on the API server it tests.
func unthrottled() *rest.Config { return &rest.Config{QPS: 1000, Burst: 2000} }

// User returns the REST config of a user authenticated by a client
// certificate as name, in groups.
func (s *APIServer) User(t testing.TB, name string, groups ...string) *rest.Config {
	t.Helper()
	u, err := s.env.AddUser(envtest.User{Name: name, Groups: groups}, unthrottled())
	if err != nil {
		t.Fatalf("adding user %s: %v", name, err)
	}
	return rest.CopyConfig(u.Config())
}

// UserKubeconfig is the path of a kubeconfig file for a user authenticated
// by a client certificate as name, in groups, as User makes them: for
// commands that read kubeconfig files (kubectl plugins).
func (s *APIServer) UserKubeconfig(t testing.TB, name string, groups ...string) string {
	t.Helper()
	u, err := s.env.AddUser(envtest.User{Name: name, Groups: groups}, unthrottled())
	if err != nil {
		t.Fatalf("adding user %s: %v", name, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kubectl runs kubectl as the admin with args and stdin, and returns its
// output and its error (an *exec.ExitError when it exits non-zero).
func (s *APIServer) Kubectl(stdin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(s.kubectl, append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// Shared is one API server for every test of a package that needs one:
// the first [Shared.Get] starts it, and the package's TestMain calls
// [Shared.Stop] after m.Run. The zero value, with Options and Setup filled
// in or not, is ready to use.
type Shared struct {
	Options Options
	// Setup, when set, runs once after the start, as the first test that
	// needs the server (create what every test expects there). When it
	// fails that test, every later Get fails too.
	Setup func(t testing.TB, s *APIServer)

	once   sync.Once
	server *APIServer
	err    error
}

// Get returns the shared API server, starting it on first use; it skips t
// without the binaries (NeedAPIServer).
func (sh *Shared) Get(t testing.TB) *APIServer {
	t.Helper()
	NeedAPIServer(t)
	sh.once.Do(func() {
		// Stays when Setup ends the test (t.Fatal).
		sh.err = errors.New("the shared API server's setup failed in an earlier test")
		s, err := start(sh.Options)
		if err != nil {
			sh.err = err
			return
		}
		sh.server = s
		if sh.Setup != nil {
			sh.Setup(t, s)
		}
		sh.err = nil
	})
	if sh.server != nil { // a crash first: it may be why the setup failed
		if err := sh.server.crashed(); err != nil {
			t.Fatal(err)
		}
	}
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.server
}

// Stop stops the shared API server, if a test started it, and says on
// stderr when that fails.
func (sh *Shared) Stop() {
	if sh.server == nil {
		return
	}
	if err := sh.server.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping kube-apiserver and etcd:", err)
	}
}
