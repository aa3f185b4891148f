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

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// listExecs applies each tool once more, in a fresh pod, under strace, and
// prints every program it started. The count of execs explains most of the
// difference in time: on this kind of machine each fork+exec of an iptables
// binary costs milliseconds. strace slows everything down, so no times are
// shown. Without strace on PATH it says so and returns.
func listExecs(ctx context.Context, w io.Writer, nss *namespaces, tools []tool) error {
	strace, err := exec.LookPath("strace")
	if err != nil {
		fmt.Fprintf(w, "\nprocesses started per apply: not listed (strace is not installed)\n")
		return nil
	}
	fmt.Fprintf(w, "\nprocesses started by one apply (strace -f in another fresh pod; the first is the tool itself):\n")
	for _, t := range tools {
		p, err := nss.newPod(ctx, t.name+"-strace")
		if err != nil {
			return err
		}
		log, err := os.CreateTemp("", "bench-redirect-strace-*")
		if err != nil {
			return err
		}
		log.Close()
		defer os.Remove(log.Name())
		argv := append([]string{strace, "-f", "-qq", "-s", "200", "-e", "trace=execve", "-e", "signal=none", "-o", log.Name()}, t.argv...)
		cmd := t.command(ctx)
		cmd.Path, cmd.Args = strace, argv
		if _, _, err := timeInNetns(p.path(), cmd); err != nil {
			return fmt.Errorf("%s under strace: %w", t.name, err)
		}
		data, err := os.ReadFile(log.Name())
		if err != nil {
			return err
		}
		execs := parseExecs(string(data))
		fmt.Fprintf(w, "  %s: %d execs\n", t.name, len(execs))
		for _, e := range execs {
			fmt.Fprintf(w, "    %s\n", e)
		}
		if err := nss.remove(p); err != nil {
			return err
		}
	}
	return nil
}

var (
	execLine    = regexp.MustCompile(`^(\d+)\s+execve\("([^"]*)", \[(.*?)\](?:, 0x[0-9a-f]+ /\* \d+ vars \*/)?(\) = (-?\d+)| <unfinished \.\.\.>)`)
	resumedLine = regexp.MustCompile(`^(\d+)\s+<\.\.\. execve resumed>.*\) = (-?\d+)`)
	quotedArg   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// parseExecs returns the successful execve calls in an strace -f log as
// command lines, the program shown by base name.
func parseExecs(log string) []string {
	var out []string
	pending := map[string]int{} // pid -> index in out of an unfinished execve
	var failed []int
	for _, l := range strings.Split(log, "\n") {
		if m := execLine.FindStringSubmatch(l); m != nil {
			args := []string{filepath.Base(m[2])}
			for i, a := range quotedArg.FindAllStringSubmatch(m[3], -1) {
				if i > 0 {
					s, err := strconv.Unquote(`"` + a[1] + `"`)
					if err != nil {
						s = a[1]
					}
					args = append(args, s)
				}
			}
			out = append(out, shellJoin(args))
			switch {
			case m[5] == "":
				pending[m[1]] = len(out) - 1
			case m[5] != "0":
				failed = append(failed, len(out)-1)
			}
			continue
		}
		if m := resumedLine.FindStringSubmatch(l); m != nil {
			if i, ok := pending[m[1]]; ok && m[2] != "0" {
				failed = append(failed, i)
			}
			delete(pending, m[1])
		}
	}
	slices.Sort(failed)
	for i := len(failed) - 1; i >= 0; i-- {
		out = append(out[:failed[i]], out[failed[i]+1:]...)
	}
	return out
}
