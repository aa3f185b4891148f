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

package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// replicaArgsEnv, when set (to the command's arguments as a JSON list),
// makes the test binary run the webhook command instead of the tests: a
// replica in a process of its own, whose memory TestReplicaUnderLoad
// measures.
const replicaArgsEnv = "MESHINIT_TEST_REPLICA_ARGS"

func TestMain(m *testing.M) {
	if spec := os.Getenv(attackersEnv); spec != "" {
		os.Exit(runAttackersProcess(spec))
	}
	if args := os.Getenv(replicaArgsEnv); args != "" {
		var list []string
		if err := json.Unmarshal([]byte(args), &list); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", replicaArgsEnv, err)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		code := webhook.Main(ctx, list, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// closedConnection are the errors a client sees when the server closes
// its connection before answering (the text after the last ": ").
// "server closed idle connection" is Go's client seeing the close of a
// kept-alive connection the server evicted at its connection limit
// (connlimit.go) just as the client reused it.
var closedConnection = []string{"error: connection reset by peer", "error: broken pipe", "error: EOF", "error: use of closed network connection",
	"error: server closed idle connection"}

// maxReplicaRSS is the most resident memory the replica may reach under
// attack: half the chart's limit.
const maxReplicaRSS = 128 << 20

// maxReplicaRSSUnderLoad is the most it may reach under TestReplicaUnderLoad's
// full review budget of large bodies: three quarters of the chart's limit.
// With GOMEMLIMIT at the limit the collector lets the heap grow to twice
// what is live before it works hard (a clean-clone make test at load 4-8
// measured a peak just over 128 MiB): the bound says the budget keeps a
// replica clear of its limit, not where the collector lands.
const maxReplicaRSSUnderLoad = 192 << 20

// TestReplicaUnderLoad runs the webhook command as the chart does (its
// config file, GOMEMLIMIT from the memory limit) in a process of its own,
// posts 40 concurrent 6 MiB and 40 concurrent 3 MiB reviews at it over TLS
// (each size from a source address of its own) for some seconds while 160
// more connections
// (from four others) send request headers of nearly 1 MiB that never end,
// and checks that its peak resident memory stays below maxReplicaRSSUnderLoad, that
// it stays ready, that oversized reviews are refused (413) and the rest
// answered or refused for now (429), and that ordinary reviews sent
// meanwhile (from another source, as the API server's) are all answered
// correctly. TestReplicaUnderAttack attacks it in other ways.
func TestReplicaUnderLoad(t *testing.T) {
	r := startReplica(t)
	ctx, wg := r.load(t)
	// Each size from a source of its own, within its share of connections.
	loaders := map[int]*http.Client{}
	for size, from := range map[int]byte{6 << 20: 2, 3 << 20: 7} {
		loaders[size] = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: r.tls, MaxIdleConnsPerHost: 100,
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}).DialContext}}
	}
	var mu sync.Mutex
	outcomes := map[string]int{} // "<size> <status or error>" -> count
	for _, size := range []int{6 << 20, 3 << 20} {
		body := reviewOf(t, "blob", map[string]string{"example.com/blob": strings.Repeat("a", size)})
		for range 40 {
			wg.Go(func() {
				for ctx.Err() == nil {
					code, _, err := r.post(loaders[size], body)
					outcome := strconv.Itoa(code)
					if err != nil {
						// The end of the message says why, without addresses.
						outcome = "error: " + err.Error()[strings.LastIndex(err.Error(), ": ")+2:]
					}
					mu.Lock()
					outcomes[fmt.Sprintf("%dMiB %s", size>>20, outcome)]++
					mu.Unlock()
				}
			})
		}
	}
	var flood map[string]int
	wg.Go(func() { flood = headerFlood(ctx, r.addr(), r.tls, floodConns, floodHeader) })
	r.check(t, ctx, wg, r.kept, r.fresh)
	t.Logf("load: %v; header flood: %v", outcomes, flood)
	closed := 0 // 3 MiB reviews whose connection the server closed unanswered
	for outcome, n := range outcomes {
		size, result, _ := strings.Cut(outcome, " ")
		switch {
		case outcome == "6MiB 413", outcome == "3MiB 200", outcome == "3MiB 429":
		// The server closes a connection before answering in two ways it
		// means to: a review it refuses unread (413, or 429 without reading
		// the body: a client still writing the body may see the reset
		// before the answer), a body not sent whole within the limiter's
		// ReadTimeout, and, at its connection limit, a new
		// connection still in its TLS handshake or first header after a
		// second (connlimit.go): on two busy cores a handshake can take
		// that long. How the client sees the close (reset, EOF, its own
		// write on the closed connection) is the kernel's and the
		// scheduler's timing, not the server's choice.
		case slices.Contains(closedConnection, result):
			if size == "3MiB" {
				closed += n
			}
		case strings.HasPrefix(outcome, "6MiB error: "):
		default:
			t.Errorf("%d reviews: %s; want 6 MiB refused (413, or the connection closed unread), 3 MiB answered (200), refused for now (429) or its connection closed at the limit", n, outcome)
		}
	}
	answered3 := outcomes["3MiB 200"] + outcomes["3MiB 429"]
	if outcomes["3MiB 200"] == 0 {
		t.Error("no 3 MiB review answered: the limiter lets none through")
	}
	if closed >= answered3 {
		t.Errorf("%d 3 MiB reviews had their connection closed unanswered, %d answered (200 or 429): the server closes more than it answers", closed, answered3)
	}
}

// replica is the webhook command in a process of its own, ready.
type replica struct {
	*server
	process *os.Process
	exited  chan error
	idle    int         // peak RSS when ready
	tls     *tls.Config // trusts its serving certificate
	caPEM   []byte      // the CA that signed it
	// kept keeps connections for reuse; fresh takes a new one for each
	// request, as an API server does beyond the connections it keeps.
	kept, fresh *http.Client
}

// startReplica runs the webhook command as the chart does (its config
// file, GOMEMLIMIT from the memory limit) against a new API server, and
// waits until it is ready.
func startReplica(t *testing.T) *replica {
	c := startCluster(t)
	createNamespace(t, c.admin, "app", map[string]string{webhook.NamespaceLabel: "enabled"})
	dir := t.TempDir()
	ca := newCA(t)
	ca.issue(t, dir)
	return c.replica(t, dir, ca)
}

// replica runs the webhook command as the chart does against c, with the
// serving certificate in certDir (issued by ca) and args besides, and
// waits until it is ready. It is stopped (SIGTERM) when the test ends, if
// not before.
func (c *cluster) replica(t *testing.T, certDir string, ca *testCA, args ...string) *replica {
	t.Helper()
	s := &server{port: testkit.FreePort(t), metrics: testkit.FreePort(t), probes: testkit.FreePort(t)}
	list, _ := json.Marshal(append([]string{
		"--kubeconfig=" + c.kubeconfig, "--config=" + c.configFile(t), "--namespace=" + releaseNamespace,
		"--host=127.0.0.1", "--port=" + strconv.Itoa(s.port),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", s.metrics), fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", s.probes),
		"--cert-mode=files", "--cert-dir=" + certDir, "--log-level=error",
	}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	logs, err := os.Create(filepath.Join(t.TempDir(), "replica.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), replicaArgsEnv+"="+string(list), "GOMEMLIMIT="+chartGOMEMLIMIT(t, c))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := <-exited
		exited <- err
		if t.Failed() {
			out, _ := os.ReadFile(logs.Name())
			t.Logf("replica's log:\n%s", out)
		}
	})
	testkit.Eventually(t, time.Minute, "the replica is ready", func() error {
		if code, body := s.get("probes", "/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz %d: %s", code, body)
		}
		return nil
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	cfg := &tls.Config{RootCAs: pool}
	return &replica{
		server: s, process: cmd.Process, exited: exited, idle: vmHWM(t, cmd.Process.Pid), tls: cfg, caPEM: ca.CertPEM(),
		kept:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 100}},
		fresh: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}},
	}
}

// loadDuration is how long a test loads a replica.
const loadDuration = 8 * time.Second

// load returns the context of a test's load, which ends after
// loadDuration, and the group of its goroutines.
func (r *replica) load(t *testing.T) (context.Context, *sync.WaitGroup) {
	// Cancelled, not timed out: a dial that fails at a deadline could
	// return before the context says it ended.
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	time.AfterFunc(loadDuration, stop)
	return ctx, &sync.WaitGroup{}
}

func (r *replica) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// post sends a review and returns the answer.
func (r *replica) post(client *http.Client, body []byte) (int, []byte, error) {
	resp, err := client.Post("https://"+r.addr()+"/inject", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// check sends ordinary reviews through each of clients and asks /readyz
// until ctx ends, waits for wg (the load), and checks that every review
// was answered correctly, at least 5 of them, that the replica was always
// ready and is still running, and that its peak RSS stayed below
// maxReplicaRSS.
func (r *replica) check(t *testing.T, ctx context.Context, wg *sync.WaitGroup, clients ...*http.Client) {
	var answered, wrong, unready atomic.Int64
	var mu sync.Mutex
	var slowest, slowestProbe time.Duration
	ordinary := reviewOf(t, "web", nil)
	for _, client := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				code, out, err := r.post(client, ordinary)
				mu.Lock()
				slowest = max(slowest, time.Since(start))
				mu.Unlock()
				var review admissionv1.AdmissionReview
				switch {
				case err != nil:
					t.Errorf("ordinary review: %v", err)
					wrong.Add(1)
				case code != http.StatusOK || json.Unmarshal(out, &review) != nil || review.Response == nil ||
					!review.Response.Allowed || !bytes.Contains(review.Response.Patch, []byte(webhook.ContainerName)):
					t.Errorf("ordinary review: %d %.300s", code, out)
					wrong.Add(1)
				default:
					answered.Add(1)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	// The kubelet waits 1 s for a probe's answer (timeoutSeconds, which
	// the chart leaves at its default); here the replica shares two cores
	// with the load the test drives, so the probe waits longer.
	probe := &http.Client{Timeout: 5 * time.Second}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.probes)
	wg.Go(func() {
		for ctx.Err() == nil {
			start := time.Now()
			resp, err := probe.Get(readyz)
			slowestProbe = max(slowestProbe, time.Since(start))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				t.Errorf("/readyz during the load: %v", err)
				unready.Add(1)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	wg.Wait()

	select {
	case err := <-r.exited:
		r.exited <- err
		t.Fatalf("the replica exited under load: %v", err)
	default:
	}
	peak := vmHWM(t, r.process.Pid)
	t.Logf("replica's peak RSS %d MiB (%d MiB when ready, bound %d MiB); ordinary reviews answered %d (slowest in %s), wrong %d; /readyz failures %d (slowest in %s)",
		peak>>20, r.idle>>20, maxReplicaRSSUnderLoad>>20, answered.Load(), slowest.Round(time.Millisecond), wrong.Load(), unready.Load(), slowestProbe.Round(time.Millisecond))
	if peak > maxReplicaRSSUnderLoad {
		t.Errorf("peak RSS %d MiB, want at most %d MiB", peak>>20, maxReplicaRSSUnderLoad>>20)
	}
	if answered.Load() < 5 {
		t.Errorf("%d ordinary reviews answered in %s", answered.Load(), loadDuration)
	}
}

// The header flood: floodConns connections, each sending a header of
// floodHeader bytes. Go's http.Server reads a header of up to 1 MiB by
// default, so a server without a smaller limit holds each one whole while
// it waits for the rest. With the load's 80 connections, fewer than the
// replica keeps open: this test is of memory; TestReplicaUnderAttack
// tests who gets the connections when they run short.
const floodConns, floodHeader = 160, 1<<20 - 8<<10

// headerFlood keeps n TLS connections to addr, from four source
// addresses (127.0.0.3 to 6), sending a request whose header never ends
// (a request line, then one header line of size bytes) and then waiting,
// until ctx ends; a connection the server closes is opened again. It returns the connections' outcomes by count: "open at
// the end" (when ctx ended), "refused" (the server answered 431 or closed
// it), or the error.
func headerFlood(ctx context.Context, addr string, cfg *tls.Config, n, size int) map[string]int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	chunk := bytes.Repeat([]byte("a"), 32<<10)
	for i := range n {
		from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(3+i%4))}
		wg.Go(func() {
			for ctx.Err() == nil {
				outcome := floodOnce(ctx, from, addr, cfg, size, chunk)
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return outcomes
}

// floodOnce is one connection of headerFlood.
func floodOnce(ctx context.Context, from *net.TCPAddr, addr string, cfg *tls.Config, size int, chunk []byte) string {
	conn, err := (&tls.Dialer{NetDialer: &net.Dialer{LocalAddr: from}, Config: cfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return "open at the end"
		}
		return "dial: " + lastPart(err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	_, err = io.WriteString(conn, "POST /inject HTTP/1.1\r\nHost: webhook\r\nX-Flood: ")
	for sent := 0; err == nil && sent < size; sent += len(chunk) {
		_, err = conn.Write(chunk[:min(len(chunk), size-sent)])
	}
	if err == nil {
		_, err = conn.Read(make([]byte, 64)) // the server's answer, if any
	}
	switch {
	case ctx.Err() != nil:
		return "open at the end"
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "refused"
	default:
		return err.Error()
	}
}

// reviewOf is an AdmissionReview creating pod name in namespace app.
func reviewOf(t *testing.T, name string, annotations map[string]string) []byte {
	t.Helper()
	pod, err := json.Marshal(testPod(name, nil, annotations))
	if err != nil {
		t.Fatal(err)
	}
	review, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "load", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "app", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: pod},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return review
}

// chartGOMEMLIMIT is the GOMEMLIMIT the chart's webhook container gets:
// its memory limit, in bytes, through a resourceFieldRef.
func chartGOMEMLIMIT(t *testing.T, c *cluster) string {
	t.Helper()
	for _, o := range c.objects {
		if o.GetKind() != "Deployment" || o.GetName() != "meshinit-webhook" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		for _, container := range d.Spec.Template.Spec.Containers {
			for _, env := range container.Env {
				if env.Name != "GOMEMLIMIT" {
					continue
				}
				ref := env.ValueFrom.ResourceFieldRef
				if ref == nil || ref.Resource != "limits.memory" || !ref.Divisor.IsZero() {
					t.Fatalf("GOMEMLIMIT %+v, want the memory limit in bytes", env)
				}
				return strconv.FormatInt(container.Resources.Limits.Memory().Value(), 10)
			}
		}
	}
	t.Fatal("the chart's webhook container has no GOMEMLIMIT")
	return ""
}

// vmHWM is the peak resident memory of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n << 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmHWM", pid)
	return 0
}
