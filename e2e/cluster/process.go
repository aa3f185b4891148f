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

package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meshinit/meshinit/internal/poll"
)

// proc identifies one process Up started. The start time (in clock ticks
// since boot, from /proc/<pid>/stat) tells it apart from a later process
// that reuses the pid.
type proc struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// start runs c in its own session, so it outlives the caller of Up, with
// stdout and stderr appended to StateDir/logs/<name>.log.
func start(o *Options, c component) (proc, error) {
	if err := os.MkdirAll(o.path("logs"), 0o755); err != nil {
		return proc{}, err
	}
	log, err := os.OpenFile(o.logFile(c.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return proc{}, err
	}
	defer log.Close()
	cmd := exec.Command(c.bin, c.args...)
	cmd.Dir = o.StateDir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return proc{}, fmt.Errorf("start %s: %w", c.name, err)
	}
	p := proc{Name: c.name, PID: cmd.Process.Pid}
	p.Start, _ = startTime(p.PID)
	// Not waited for: Down stops it by pid, and alive reaps it.
	_ = cmd.Process.Release()
	return p, nil
}

func (o *Options) logFile(name string) string { return o.path("logs", name+".log") }

// startTime reads field 22 of /proc/<pid>/stat; it fails for a process
// that is gone or a zombie.
func startTime(pid int) (uint64, error) {
	state, st, err := procStat(pid)
	if err == nil && (state == "Z" || state == "X") {
		err = fmt.Errorf("process %d is gone", pid)
	}
	return st, err
}

// procStat returns the state (field 3) and start time (field 22) of
// /proc/<pid>/stat.
func procStat(pid int) (state string, start uint64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) may hold spaces; it ends at the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(fields) < 20 {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, stat)
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	return fields[0], start, err
}

// alive says whether p is still the running process Up started. If it is
// a zombie child of this process (Up's caller), it is reaped.
func (p proc) alive() bool {
	state, st, err := procStat(p.PID)
	if err != nil || st != p.Start {
		return false
	}
	if state == "Z" || state == "X" {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.PID, &ws, syscall.WNOHANG, nil)
		return false
	}
	return true
}

// stopAll sends SIGTERM to every live process of ps, waits until they are
// gone, and after stopGrace sends SIGKILL to those left.
func stopAll(ps []proc) error {
	var wg sync.WaitGroup
	errs := make([]error, len(ps))
	for i, p := range ps {
		if !p.alive() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stop()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p proc) stop() error {
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.Name, p.PID, err)
	}
	if p.waitGone(stopGrace) {
		return nil
	}
	if p.alive() {
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill %s (pid %d): %w", p.Name, p.PID, err)
		}
	}
	if !p.waitGone(5 * time.Second) {
		return fmt.Errorf("%s (pid %d) still runs after SIGKILL", p.Name, p.PID)
	}
	return nil
}

// waitGone says whether p is gone within timeout.
func (p proc) waitGone(timeout time.Duration) bool {
	return poll.Until(context.Background(), 50*time.Millisecond, timeout, func(context.Context) error {
		if p.alive() {
			return fmt.Errorf("%s (pid %d) still runs", p.Name, p.PID)
		}
		return nil
	}) == nil
}

// shimsOf returns the containerd shims serving the containerd at socket
// (they outlive containerd, and name its socket in their command line).
func shimsOf(socket string) []proc {
	var ps []proc
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-address" && args[i+1] == socket {
				if st, err := startTime(pid); err == nil {
					ps = append(ps, proc{Name: "containerd-shim", PID: pid, Start: st})
				}
				break
			}
		}
	}
	return ps
}

// tail returns the last n lines of file, for error messages.
func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
