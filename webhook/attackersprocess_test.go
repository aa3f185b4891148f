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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// The attackers run in a process of their own at the lowest CPU priority
// (nice 19). A tenant's pods run on their own cores, or their node's, not
// on the replica's; on the test machine (2 cores, shared with other tests
// in make test) thousands of attacking connections in the test process
// would take the cores of the replica and of the well-behaved client
// that measures it, and the test would measure the machine, not the
// listeners. What the replica spends on the attackers (handshakes, reads,
// evictions, closes) is still its own.

// attackersEnv, when set (to a JSON list of attackers), makes the test
// binary run those attackers until SIGTERM, then print their stats (a
// JSON list) and exit.
const attackersEnv = "MESHINIT_TEST_ATTACKERS"

// runAttackersProcess is the attackers process's main; it returns the exit
// code.
func runAttackersProcess(spec string) int {
	var attackers []attacker
	if err := json.Unmarshal([]byte(spec), &attackers); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", attackersEnv, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	stats := make([]*attackStats, len(attackers))
	var wg sync.WaitGroup
	for i, a := range attackers {
		stats[i] = &attackStats{}
		wg.Go(func() { a.run(ctx, stats[i]) })
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(stats); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startAttackers starts attackers in a process of their own at nice 19;
// the function it returns stops them and returns their stats, in order.
func startAttackers(t *testing.T, attackers []attacker) (stop func() []*attackStats) {
	t.Helper()
	spec, err := json.Marshal(attackers)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nice", "-n", "19", os.Args[0], "-test.run=^$")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), attackersEnv+"="+string(spec))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var stats []*attackStats
	stop = func() []*attackStats {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("the attackers process: %v: %s", err, stderr.String())
				return
			}
			if err := json.Unmarshal(stdout.Bytes(), &stats); err != nil || len(stats) != len(attackers) {
				t.Errorf("the attackers' stats %q: %v", stdout.String(), err)
			}
		})
		return stats
	}
	t.Cleanup(func() { stop() })
	return stop
}
