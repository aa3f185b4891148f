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

package v1alpha1

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates the deepcopy code and the CRD
// (hack/controller-gen/generate.sh, which `make generate` runs) into a
// temporary directory and compares them with the committed files.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: builds controller-gen")
	}
	out := t.TempDir()
	cmd := exec.Command(filepath.Join("..", "..", "hack", "controller-gen", "generate.sh"), out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, msg)
	}
	for generated, committed := range map[string]string{
		filepath.Join(out, "object", "zz_generated.deepcopy.go"):       "zz_generated.deepcopy.go",
		filepath.Join(out, "crd", "meshinit.io_redirectpolicies.yaml"): filepath.Join("..", "..", "charts", "meshinit", "crds", "meshinit.io_redirectpolicies.yaml"),
		filepath.Join(out, "crd", "meshinit.io_redirectortrusts.yaml"): filepath.Join("..", "..", "charts", "meshinit", "crds", "meshinit.io_redirectortrusts.yaml"),
	} {
		want, err := os.ReadFile(generated)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(committed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run `make generate` and commit the result", committed)
		}
	}
}
