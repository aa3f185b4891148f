//go:build linux

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

// Command redirect benchmarks meshinit's `redirector apply` against Istio's
// `pilot-agent istio-iptables` with the equivalent configuration: the wall
// time of one apply in a fresh network namespace set up like a pod after CNI
// (veth pair, address, default route), N runs interleaved meshinit, istio,
// meshinit, istio, ... It first checks, with real TCP connections, that both
// tools redirect the same traffic, and prints both nat tables. A third,
// the floor, times the least any tool could do: one iptables-restore of the
// rules meshinit writes, interleaved with the other two.
//
// It must run as root. `make bench-redirect` builds both binaries and runs it:
//
//	redirect -redirector bin/redirector -pilot-agent /var/cache/meshinit/istio-<v>/pilot-agent [-n 20] [-v]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The goals (issue 22): meshinit's median at most this share of Istio's,
// and at most this multiple of the floor's.
const (
	goal      = 0.25
	floorGoal = 2.0
)

// tool is one redirector under test.
type tool struct {
	name string
	argv []string
	// chains are the nat chains whose presence shows its rules are in place.
	chains []string
	// stdin is what the tool reads (the floor's ruleset).
	stdin []byte
}

func (t tool) command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, t.argv[0], t.argv[1:]...)
	cmd.Env = childEnv()
	if t.stdin != nil {
		cmd.Stdin = bytes.NewReader(t.stdin)
	}
	return cmd
}

// floorOf is the least any tool can do to put meshinit's rules in place:
// one iptables-restore, of the nat table meshinit wrote in a fresh pod
// namespace, with the backend meshinit chose there (the one the kernel's
// rules are in: nft when iptables-nft-save shows them).
func floorOf(ctx context.Context, nss *namespaces, meshinit tool) (tool, error) {
	p, err := nss.newPod(ctx, "floor")
	if err != nil {
		return tool{}, err
	}
	defer nss.remove(p)
	if _, _, err := timeInNetns(p.path(), meshinit.command(ctx)); err != nil {
		return tool{}, err
	}
	for _, backend := range []string{"nft", "legacy"} {
		rules, err := outputInNetns(ctx, p.path(), "iptables-"+backend+"-save", "-t", "nat")
		if err == nil && bytes.Contains(rules, []byte(":"+meshinit.chains[0]+" ")) {
			return tool{name: "floor", chains: meshinit.chains, stdin: rules,
				argv: []string{"iptables-" + backend + "-restore", "--noflush"}}, nil
		}
	}
	return tool{}, fmt.Errorf("no iptables backend shows meshinit's chain %s after an apply", meshinit.chains[0])
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == dialCommand {
		os.Exit(dialMain(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer stop()
	if err := benchMain(ctx, os.Args[1:], os.Stdout); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted (%v); its network namespaces are removed", err)
		}
		fmt.Fprintln(os.Stderr, "bench-redirect:", err)
		stop()
		os.Exit(1)
	}
}

func benchMain(ctx context.Context, args []string, w io.Writer) (err error) {
	fs := flag.NewFlagSet("redirect", flag.ContinueOnError)
	redirector := fs.String("redirector", "", "meshinit's redirector binary (required)")
	agent := fs.String("pilot-agent", "", "Istio's pilot-agent binary (required)")
	istioVersion := fs.String("istio-version", "", "the version pilot-agent was built from, for the report")
	n := fs.Int("n", 20, "timed runs of each tool (the issue asks for at least 20)")
	execs := fs.Bool("execs", true, "also list the programs each tool starts (needs strace)")
	verbose := fs.Bool("v", false, "print what each tool logs on its first apply")
	dns := fs.String("dns", "off", `DNS capture in both tools: "off"; "all" (meshinit --capture-dns=all, istio --redirect-dns --capture-all-dns); `+
		`"nameservers" (meshinit --capture-dns=nameservers, istio --redirect-dns: both read the nameservers of /etc/resolv.conf)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *redirector == "" || *agent == "" {
		return fmt.Errorf("-redirector and -pilot-agent are required")
	}
	if *n < 1 {
		return fmt.Errorf("-n=%d: need at least one run", *n)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("must run as root: it creates network namespaces and programs iptables in them")
	}
	meshinit := tool{name: "meshinit", chains: []string{"MESHINIT_INBOUND", "MESHINIT_OUTPUT"},
		argv: []string{*redirector, "apply"}}
	// The configuration of Istio's istio-init container, equivalent to the
	// redirector's defaults. Outside a pod istio-iptables needs no env, files
	// or extra flags: -u makes it skip looking up the istio-proxy user,
	// --run-validation defaults to false, and it writes nothing but iptables.
	// It does need a non-loopback address ("no valid local IP address found"
	// otherwise), which the pod's eth0 has.
	istio := tool{name: "istio", chains: []string{"ISTIO_INBOUND", "ISTIO_OUTPUT"},
		argv: []string{*agent, "istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT",
			"-i", "*", "-b", "*", "-d", "15090,15021,15020"}}
	switch *dns {
	case "off":
	case "all":
		meshinit.argv = append(meshinit.argv, "--capture-dns=all")
		istio.argv = append(istio.argv, "--redirect-dns", "--capture-all-dns")
	case "nameservers":
		meshinit.argv = append(meshinit.argv, "--capture-dns=nameservers")
		istio.argv = append(istio.argv, "--redirect-dns")
	default:
		return fmt.Errorf("-dns=%q: want off, all or nameservers", *dns)
	}
	if *dns != "off" {
		// Both keep the app's DNS and the proxy's apart with conntrack
		// zones in the raw table, which the dumps show too.
		meshinit.chains = append(meshinit.chains, "MESHINIT_DNS")
		dumpTables = append(dumpTables, "raw")
	}
	tools := []tool{meshinit, istio}

	nss, err := newNamespaces(ctx)
	defer func() {
		if cerr := nss.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "meshinit redirect benchmark: one apply in a fresh network namespace (veth pair, address, default route)\n")
	fmt.Fprintf(w, "  meshinit: %s\n", shellJoin(meshinit.argv))
	fmt.Fprintf(w, "  istio:    %s", shellJoin(istio.argv))
	if *istioVersion != "" {
		fmt.Fprintf(w, "  (istio.io/istio %s)", *istioVersion)
	}
	fmt.Fprintf(w, "\n  machine: %d CPUs, load average %s; this benchmark runs with scheduling policy %s\n\n",
		runtime.NumCPU(), loadAvg(), schedPolicy())

	// Behaviour first: it fails fast if either tool does not work here, and
	// doubles as the warm-up (page cache, first exec of each binary).
	if err := compareBehaviour(ctx, w, nss, tools, *verbose); err != nil {
		return err
	}

	if *execs {
		if err := listExecs(ctx, w, nss, tools); err != nil {
			return err
		}
	}
	floor, err := floorOf(ctx, nss, meshinit)
	if err != nil {
		return err
	}
	tools = append(tools, floor)
	fmt.Fprintf(w, "\n  floor:    %s < (meshinit's nat table, %d rules)\n", shellJoin(floor.argv), bytes.Count(floor.stdin, []byte("\n-A ")))

	times := make([][]time.Duration, len(tools))
	fmt.Fprintf(w, "\ntimed runs (N=%d, interleaved %s):\n%4s", *n, strings.Join(names(tools), ", "), "run")
	for _, t := range tools {
		fmt.Fprintf(w, " %10s", t.name)
	}
	fmt.Fprintln(w)
	for i := range *n {
		fmt.Fprintf(w, "%4d", i+1)
		for j, t := range tools {
			d, err := timedApply(ctx, nss, t)
			if err != nil {
				fmt.Fprintln(w)
				return fmt.Errorf("run %d, %s: %w", i+1, t.name, err)
			}
			times[j] = append(times[j], d)
			fmt.Fprintf(w, " %10s", ms(d))
		}
		fmt.Fprintln(w)
	}
	report(w, tools, times, *n)
	fmt.Fprintf(w, "load average at the end: %s\n", loadAvg())
	return nil
}

// timedApply creates a fresh pod namespace, times one apply of t in it,
// checks t's rules are there, and removes the namespace.
func timedApply(ctx context.Context, nss *namespaces, t tool) (time.Duration, error) {
	p, err := nss.newPod(ctx, t.name)
	if err != nil {
		return 0, err
	}
	defer nss.remove(p)
	d, _, err := timeInNetns(p.path(), t.command(ctx))
	if err != nil {
		return 0, err
	}
	nat, err := natTables(ctx, p)
	if err != nil {
		return 0, err
	}
	for _, c := range t.chains {
		if !strings.Contains(nat.String(), ":"+c+" ") {
			return 0, fmt.Errorf("apply succeeded but chain %s is missing from the nat table:\n%s", c, nat)
		}
	}
	return d, nil
}

func report(w io.Writer, tools []tool, times [][]time.Duration, n int) {
	fmt.Fprintf(w, "\n%-10s %10s %10s %10s %10s\n", "", "median", "p90", "min", "max")
	medians := make([]time.Duration, len(tools))
	for i, t := range tools {
		s := summarize(times[i])
		medians[i] = s.median
		fmt.Fprintf(w, "%-10s %10s %10s %10s %10s\n", t.name, ms(s.median), ms(s.p90), ms(s.min), ms(s.max))
	}
	ratio := float64(medians[0]) / float64(medians[1])
	fmt.Fprintf(w, "\nratio meshinit/istio (medians, N=%d): %.3f (istio takes %.1fx as long)\n", n, ratio, 1/ratio)
	fmt.Fprintf(w, "goal (meshinit <= %.2f of istio): %s\n", goal, verdict(ratio, goal, medians[1]))
	floor := float64(medians[0]) / float64(medians[2])
	fmt.Fprintf(w, "ratio meshinit/floor (one %s of meshinit's rules): %.2f\n", tools[2].argv[0], floor)
	fmt.Fprintf(w, "goal (meshinit <= %.0fx the floor): %s\n", floorGoal, verdict(floor, floorGoal, medians[2]))
	if n < 20 {
		fmt.Fprintf(w, "note: N=%d; the issue asks for at least 20 runs\n", n)
	}
}

// verdict says whether ratio meets goal, and if not, the median that
// would, against the baseline's median.
func verdict(ratio, goal float64, baseline time.Duration) string {
	if ratio <= goal {
		return "MET"
	}
	return fmt.Sprintf("NOT MET: meshinit's median would have to be <= %s", ms(time.Duration(float64(baseline)*goal)))
}

func names(tools []tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.name)
	}
	return out
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// childEnv is the environment both tools run with: this one, with the
// directories iptables lives in on PATH.
func childEnv() []string {
	env := os.Environ()
	for i, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + path + ":/usr/sbin:/sbin"
			return env
		}
	}
	return append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, "*?[ $'\"") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// loadAvg is the 1, 5 and 15 minute load averages: other work on the machine
// slows both tools, and each fork+exec most.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// schedPolicy names this process's scheduling policy (field 41 of
// /proc/self/stat); the tools inherit it. make bench-redirect runs under
// SCHED_FIFO (chrt) so that other builds on a shared machine inflate neither.
func schedPolicy() string {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return "unknown"
	}
	// Fields after the parenthesised command name, which may hold spaces.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	const policyField = 41 - 3 // field 41, counted from field 3 (state)
	if len(f) <= policyField {
		return "unknown"
	}
	names := map[string]string{"0": "SCHED_OTHER (normal)", "1": "SCHED_FIFO", "2": "SCHED_RR", "3": "SCHED_BATCH", "5": "SCHED_IDLE"}
	if name, ok := names[f[policyField]]; ok {
		return name
	}
	return "policy " + f[policyField]
}
