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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A reaper kills what the kit started and removes its files once the test
// process has ended without stopping them: a panic, go test's -timeout (10
// minutes unless given, less than a package such as charts takes), a signal.
// envtest starts etcd and kube-apiserver in process groups of their own, so
// they outlive the test binary, holding their ports, memory and CPU, and the
// next run on the machine competes with them. The reaper is a shell in its
// own process group (a terminal's ^C does not reach it) that polls the test
// process once a second; stopping the API server normally stops it first,
// so it never kills a process ID the system may have given to another.
type reaper struct {
	cmd  *exec.Cmd
	pids []int    // what it kills
	dirs []string // and removes
}

// reapScript: $1 is the test process, $2 the process IDs to kill, the rest
// the directories to remove.
const reapScript = `parent=$1 pids=$2; shift 2
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
kill -KILL $pids 2>/dev/null
rm -rf -- "$@"`

// startReaper starts the reaper of pids and dirs for this process.
func startReaper(pids []int, dirs []string) (*reaper, error) {
	ids := make([]string, len(pids))
	for i, p := range pids {
		ids[i] = strconv.Itoa(p)
	}
	args := append([]string{"-c", reapScript, "meshinit-testkit-reaper", strconv.Itoa(os.Getpid()), strings.Join(ids, " ")}, dirs...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the reaper of %v: %w", pids, err)
	}
	return &reaper{cmd: cmd, pids: pids, dirs: dirs}, nil
}

// stop stops the reaper, before what it watches is stopped normally.
func (r *reaper) stop() {
	if r == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait() // killed: its exit status says nothing
}

// procStat reads process pid's state (R, S, Z, ...) and parent from
// /proc; ok is false when it is gone.
func procStat(pid int) (state string, ppid int, ok bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// childrenWith returns the process IDs of this process's children whose
// command line has an argument arg, read from /proc.
func childrenWith(arg string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(pid); !ok || ppid != self {
			continue // gone meanwhile, or not a child
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if a == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}
