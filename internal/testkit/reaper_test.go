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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashEnv makes TestReaperCrashingProcess the process that crashes.
const crashEnv = "MESHINIT_TESTKIT_CRASH"

// TestReaperAfterCrash: a test process that ends without stopping its API
// server (here os.Exit, as go test's -timeout panic does) leaves no
// etcd, kube-apiserver or kube-controller-manager running and none of their
// files (envtest's serving certificates included): the reaper kills and
// removes them within seconds.
func TestReaperAfterCrash(t *testing.T) {
	NeedAPIServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestReaperCrashingProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the crashing process: %v, want exit status 3; its output:\n%s", err, out.String())
	}
	var pids []int
	var dirs []string
	for sc := bufio.NewScanner(&out); sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		} else if rest, ok := strings.CutPrefix(sc.Text(), "dir "); ok {
			dirs = append(dirs, rest)
		}
	}
	if len(pids) != 3 || len(dirs) != 4 {
		t.Fatalf("the crashing process named pids %v and dirs %v, want 3 and 4; its output:\n%s", pids, dirs, out.String())
	}
	left := func() (alive []int, present []string) {
		for _, p := range pids {
			if syscall.Kill(p, 0) == nil {
				alive = append(alive, p)
			}
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				present = append(present, d)
			}
		}
		return alive, present
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		alive, present := left()
		if len(alive) == 0 && len(present) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			for _, d := range present {
				_ = os.RemoveAll(d)
			}
			t.Fatalf("20 s after the test process ended, processes %v still ran and %v were still there (now killed and removed)", alive, present)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestReaperCrashingProcess is TestReaperAfterCrash's crashing process: it
// starts an API server, names what the reaper must stop and remove, and
// exits without any cleanup. It does nothing unless run by that test.
func TestReaperCrashingProcess(t *testing.T) {
	if os.Getenv(crashEnv) == "" {
		t.Skip("run by TestReaperAfterCrash")
	}
	s, err := start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What the reaper holds: the test checks it is gone, so a reaper that
	// missed a process or a directory fails it.
	if len(s.reaper.pids) != 3 || len(s.reaper.dirs) != 4 ||
		!slices.ContainsFunc(s.reaper.dirs, func(d string) bool { return strings.HasPrefix(filepath.Base(d), "envtest-serving-certs-") }) {
		t.Fatalf("the reaper holds processes %v and directories %v, want etcd, kube-apiserver, kube-controller-manager, their three directories and envtest's serving certificates'", s.reaper.pids, s.reaper.dirs)
	}
	for _, p := range s.reaper.pids {
		fmt.Printf("pid %d\n", p)
	}
	for _, d := range s.reaper.dirs {
		fmt.Printf("dir %s\n", d)
	}
	os.Exit(3)
}
