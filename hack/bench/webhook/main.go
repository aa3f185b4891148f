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

// Command bench-webhook measures meshinit's admission webhook over TLS on
// loopback next to a no-op controller-runtime webhook that only answers
// "allowed", in the same run: reviews per second at saturation, CPU time
// per review (of the server process alone: each server is a child process
// that reports its own rusage) and p50/p99 latency at a fixed rate. It
// prints the CPU-per-review ratio to the no-op floor. Run by make
// bench-webhook.
package main

import (
	"bytes"
	"context"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/internal/poll"
)

//go:embed pod.yaml
var podYAML []byte

func main() {
	serveKind := flag.String("serve", "", "internal: run one webhook server (meshinit or noop) in this process")
	port := flag.Int("port", 0, "internal: the server's port")
	certDir := flag.String("cert-dir", "", "internal: the server's cert dir")
	rounds := flag.Int("rounds", 3, "measurement rounds, alternating the servers; medians are printed")
	satFor := flag.Duration("saturate", 3*time.Second, "length of each saturated phase")
	conns := flag.Int("conns", 4, "connections of the saturated phase")
	rate := flag.Int("rate", 1000, "reviews per second of the paced phase")
	pacedFor := flag.Duration("paced", 5*time.Second, "length of each paced phase")
	flag.Parse()
	if *serveKind != "" {
		if err := serve(*serveKind, *port, *certDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, *satFor, *conns, *rate, *pacedFor); err != nil {
		fmt.Fprintln(os.Stderr, "bench-webhook:", err)
		os.Exit(1)
	}
}

// result is one round of one server.
type result struct {
	rps      float64       // reviews per second, saturated
	cpuSat   time.Duration // server CPU per review, saturated
	cpuPaced time.Duration // server CPU per review at the paced rate
	p50, p99 time.Duration // at the paced rate
}

func run(rounds int, satFor time.Duration, conns, rate int, pacedFor time.Duration) error {
	dir, err := os.MkdirTemp("", "bench-webhook-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pool, err := writeCerts(dir)
	if err != nil {
		return err
	}
	body, err := reviewBody()
	if err != nil {
		return err
	}
	var targets []*target
	defer func() {
		for _, t := range targets {
			_ = t.cmd.Process.Signal(os.Interrupt)
			_ = t.cmd.Wait()
		}
	}()
	for _, kind := range []string{serverNoop, serverMeshinit} {
		t, err := start(kind, dir, pool)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		allowed, patch, err := t.check(body)
		if err != nil || !allowed || (t.name == serverMeshinit) != (patch > 0) {
			return fmt.Errorf("%s: allowed=%v, patch of %d bytes, %v: not the expected answer", t.name, allowed, patch, err)
		}
		if _, _, err := t.saturate(body, conns, time.Second); err != nil { // warm-up
			return err
		}
	}

	fmt.Printf("bench-webhook: AdmissionReview of %d bytes (pod of 3 containers, 12 annotations), TLS 1.2+ HTTP/1.1 on loopback, %d CPUs, %d rounds\n",
		len(body), runtime.NumCPU(), rounds)
	fmt.Printf("load average before: %s\n", loadAverage())
	results := map[string][]result{}
	for r := range rounds {
		order := targets
		if r%2 == 1 {
			order = []*target{targets[1], targets[0]}
		}
		for _, t := range order {
			res, err := measure(t, body, satFor, conns, rate, pacedFor)
			if err != nil {
				return err
			}
			results[t.name] = append(results[t.name], res)
		}
	}
	med := func(name string, f func(result) time.Duration) time.Duration {
		var v []time.Duration
		for _, r := range results[name] {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	fmt.Printf("\n%-9s %12s %16s %16s %10s %10s\n", "server", "reviews/s", "CPU/review sat.", fmt.Sprintf("CPU/review %d/s", rate), "p50", "p99")
	for _, t := range targets {
		rps := med(t.name, func(r result) time.Duration { return time.Duration(r.rps) })
		fmt.Printf("%-9s %12d %16s %16s %10s %10s\n", t.name, int64(rps),
			med(t.name, func(r result) time.Duration { return r.cpuSat }).Round(100*time.Nanosecond),
			med(t.name, func(r result) time.Duration { return r.cpuPaced }).Round(100*time.Nanosecond),
			med(t.name, func(r result) time.Duration { return r.p50 }).Round(time.Microsecond),
			med(t.name, func(r result) time.Duration { return r.p99 }).Round(time.Microsecond))
	}
	ratio := func(f func(result) time.Duration) float64 {
		return float64(med(serverMeshinit, f)) / float64(med(serverNoop, f))
	}
	satRatio := ratio(func(r result) time.Duration { return r.cpuSat })
	pacedRatio := ratio(func(r result) time.Duration { return r.cpuPaced })
	p99 := med(serverMeshinit, func(r result) time.Duration { return r.p99 })
	fmt.Printf("\nCPU per review, meshinit / no-op: %.2fx saturated, %.2fx at %d/s (goal: at most 1.5x) %s\n",
		satRatio, pacedRatio, rate, verdict(max(satRatio, pacedRatio) <= 1.5))
	fmt.Printf("meshinit p99 at %d reviews/s: %s (goal: under 5ms) %s\n", rate, p99.Round(time.Microsecond), verdict(p99 < 5*time.Millisecond))
	fmt.Printf("load average after: %s (latencies only mean something on an otherwise idle machine)\n", loadAverage())
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// measure runs one saturated and one paced phase against t.
func measure(t *target, body []byte, satFor time.Duration, conns, rate int, pacedFor time.Duration) (result, error) {
	var res result
	cpu0, err := t.cpu()
	if err != nil {
		return res, err
	}
	n, wall, err := t.saturate(body, conns, satFor)
	if err != nil {
		return res, err
	}
	cpu1, err := t.cpu()
	if err != nil {
		return res, err
	}
	res.rps = float64(n) / wall.Seconds()
	res.cpuSat = (cpu1 - cpu0) / time.Duration(n)
	lat, err := t.paced(body, rate, pacedFor)
	if err != nil {
		return res, err
	}
	cpu2, err := t.cpu()
	if err != nil {
		return res, err
	}
	res.cpuPaced = (cpu2 - cpu1) / time.Duration(len(lat))
	res.p50, res.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return res, nil
}

// start runs one server as a child process and waits until it answers.
func start(kind, certDir string, pool *x509.CertPool) (*target, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve", kind, "-port", fmt.Sprint(port), "-cert-dir", certDir)
	// Not shown: the servers log TLS handshakes the client abandons at exit.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := newTarget(kind, port, pool, cmd)
	err = poll.Until(context.Background(), 50*time.Millisecond, 30*time.Second, func(context.Context) error {
		_, err := t.cpu()
		return err
	})
	if err == nil {
		return t, nil
	}
	_ = cmd.Process.Kill()
	return nil, fmt.Errorf("the %s server did not answer within 30s (%v):\n%s", kind, err, stderr.String())
}

// reviewBody is the AdmissionReview the API server would send for pod.yaml.
func reviewBody() ([]byte, error) {
	pod, err := yaml.YAMLToJSON(podYAML)
	if err != nil {
		return nil, err
	}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1",
		"kind":       "AdmissionReview",
		"request": map[string]any{
			"uid":             "7b7c9a64-3c1e-4b4f-8c55-0f3d2a1b9e21",
			"kind":            map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":        map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"requestKind":     map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"requestResource": map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"namespace":       "shop",
			"operation":       "CREATE",
			"userInfo":        map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller", "uid": "5e0d1a7c-9f3b-4c2d-8e6f-1a2b3c4d5e6f", "groups": []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}},
			"object":          json.RawMessage(pod),
			"oldObject":       nil,
			"dryRun":          false,
			"options":         map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
		},
	}
	return json.Marshal(review)
}
