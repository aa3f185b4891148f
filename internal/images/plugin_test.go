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

package images

import (
	"context"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBuildPlugin builds kubectl-meshinit as `make plugin` does and checks
// that it is static and that `kubectl meshinit version --client` prints the version
// BuildPlugin sets with -ldflags -X.
func TestBuildPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	bin := filepath.Join(t.TempDir(), "bin", "kubectl-meshinit")
	if err := BuildPlugin(context.Background(), "", runtime.GOOS, runtime.GOARCH, testVersion, bin); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version", "--client").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != testVersion {
		t.Errorf("kubectl-meshinit version: %q, %v; want %q", out, err, testVersion)
	}
	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("kubectl-meshinit is dynamically linked (it has a program interpreter)")
		}
	}
}
