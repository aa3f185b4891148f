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
	"errors"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashReason: the reason read from the log of kube-apiserver v1.32.13
// as it crashed under the charts package's tests (kubernetes/kubernetes#135757),
// and from a log with no Go crash in it.
func TestCrashReason(t *testing.T) {
	log := `I1205 14:38:41.469156   32512 policy_source.go:240] refreshing policies
fatal error: concurrent map read and map write

goroutine 7546 [running]:
internal/runtime/maps.fatal({0x37dd821?, 0x18?})
	runtime/panic.go:1181 +0x18
k8s.io/apiserver/pkg/cel.(*DeclTypeProvider).FindStructFieldType(0x255dc8608480, {0x37b7116, 0x14}, {0x255dcd04e840, 0x1b})
	k8s.io/apiserver@v0.32.13/pkg/cel/types.go:463 +0x74
k8s.io/apiserver/pkg/cel.(*DeclTypeProvider).FindStructFieldType(0x255dc6f22240, {0x37b7116, 0x14}, {0x255dcd04e840, 0x1b})
	k8s.io/apiserver@v0.32.13/pkg/cel/types.go:460 +0x21f
github.com/google/cel-go/interpreter.(*attrFactory).NewQualifier(0x255dcc8c4480, 0x1b?, 0x379, {0x301b7a0, 0x255dc20bb690}, 0x0)
	github.com/google/cel-go@v0.22.0/interpreter/attributes.go:226 +0x9f
github.com/google/cel-go/interpreter.(*planner).planSelect(0x255dc74696a0, {0x3a42e60, 0x255dc0135b90})
	github.com/google/cel-go@v0.22.0/interpreter/planner.go:192 +0x206
github.com/google/cel-go/interpreter.(*planner).Plan(0x255dc74696a0, {0x3a42e60, 0x255dc0135b90})
	github.com/google/cel-go@v0.22.0/interpreter/planner.go:83 +0x177

goroutine 1 [select]:
k8s.io/apiserver/pkg/server.(*GenericAPIServer).Run(0x0)
`
	want := "fatal error: concurrent map read and map write in k8s.io/apiserver/pkg/cel.(*DeclTypeProvider).FindStructFieldType" +
		" < k8s.io/apiserver/pkg/cel.(*DeclTypeProvider).FindStructFieldType < github.com/google/cel-go/interpreter.(*attrFactory).NewQualifier" +
		" < github.com/google/cel-go/interpreter.(*planner).planSelect"
	if got := crashReason(log); got != want {
		t.Errorf("crashReason:\n got %s\nwant %s", got, want)
	}
	killed := "I1205 line one\nI1205 line two\n"
	if got, want := crashReason(killed), "the end of its log:\nI1205 line one\nI1205 line two"; got != want {
		t.Errorf("crashReason of a log without a crash:\n got %q\nwant %q", got, want)
	}
}

// TestCrashedAPIServer: an API server that dies under the tests (killed
// here) is reported as such, with its log kept, instead of every later
// request failing with "connection refused".
func TestCrashedAPIServer(t *testing.T) {
	NeedAPIServer(t)
	s, err := start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.crashed(); err != nil {
		t.Fatalf("a running API server: %v", err)
	}
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, "kube-apiserver has exited", func() error {
		if running(s.pid) {
			return errors.New("it runs")
		}
		return nil
	})
	if err := s.crashed(); err == nil {
		t.Error("crashed: nil after the server was killed")
	}
	err = s.stop()
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver exited during the tests: the end of its log:") {
		t.Fatalf("stop after the crash: %v, want it to say the server exited and how its log ends", err)
	}
	kept := regexp.MustCompile(`its log is kept at (\S+)`).FindStringSubmatch(err.Error())
	if kept == nil {
		t.Fatalf("stop after the crash: %v, want where the log is kept", err)
	}
	if _, err := os.Stat(kept[1]); err != nil {
		t.Errorf("the kept log: %v", err)
	}
	os.Remove(kept[1])
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("the kit's files %s after stop: %v, want them removed", s.dir, err)
	}
}
