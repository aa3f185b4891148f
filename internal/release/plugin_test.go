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

package release_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/internal/release"
)

// TestPluginRelease runs GoReleaser on the repository's .goreleaser.yaml
// for this machine's platform only (make release builds linux and darwin,
// amd64 and arm64) into a temporary dist: the archive holds the plugin,
// which says the release's version, and the LICENSE; checksums.txt and
// the krew manifest carry the archive's sha256; the changelog lists
// commits. GoReleaser is built by hack/goreleaser/build.sh (minutes cold,
// instant warm).
func TestPluginRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the archive's plugin is run: linux only")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack/goreleaser/build.sh")).Output()
	if err != nil {
		t.Fatalf("hack/goreleaser/build.sh: %v", err)
	}
	const version = "9.8.7"
	dist := filepath.Join(t.TempDir(), "plugin")
	platform := "linux/" + runtime.GOARCH
	if err := release.Plugin(context.Background(), release.PluginOptions{
		GoReleaser: strings.TrimSpace(string(out)), Root: root, Version: version, Dist: dist, Platforms: []string{platform},
	}); err != nil {
		t.Fatal(err)
	}

	name := "kubectl-meshinit_" + version + "_linux_" + runtime.GOARCH + ".tar.gz"
	archive, err := os.ReadFile(filepath.Join(dist, name))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	digest := hex.EncodeToString(sum[:])
	checksums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(checksums), digest+"  "+name) {
		t.Errorf("checksums.txt has no %s for %s:\n%s", digest, name, checksums)
	}

	files := untar(t, archive, filepath.Join(t.TempDir(), "x"))
	for _, f := range []string{"kubectl-meshinit", "LICENSE"} {
		if _, ok := files[f]; !ok {
			t.Errorf("%s lacks %s (has %v)", name, f, files)
		}
	}
	if p, ok := files["kubectl-meshinit"]; ok {
		v, err := exec.Command(p, "version", "--client").CombinedOutput()
		if err != nil || !strings.Contains(string(v), version) {
			t.Errorf("kubectl-meshinit version: %q, %v; want %s", v, err, version)
		}
	}

	raw, err := os.ReadFile(filepath.Join(dist, "krew", "meshinit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var krew struct {
		Kind string
		Spec struct {
			Version   string
			Platforms []struct {
				URI    string
				Sha256 string
				Bin    string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &krew); err != nil {
		t.Fatal(err)
	}
	if krew.Kind != "Plugin" || krew.Spec.Version != "v"+version || len(krew.Spec.Platforms) != 1 ||
		krew.Spec.Platforms[0].Sha256 != digest || !strings.HasSuffix(krew.Spec.Platforms[0].URI, "/v"+version+"/"+name) ||
		krew.Spec.Platforms[0].Bin != "kubectl-meshinit" {
		t.Errorf("krew manifest, want version v%s and %s with sha256 %s:\n%s", version, name, digest, raw)
	}

	changelog, err := os.ReadFile(filepath.Join(dist, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "log", "-1", "--no-merges", "--format=%H %s").Output()
	if err != nil {
		t.Fatal(err)
	}
	if short := strings.TrimSpace(string(head)); !strings.Contains(string(changelog), short) {
		t.Errorf("CHANGELOG.md lacks the newest commit %q:\n%.2000s", short, changelog)
	}
}

// untar extracts a .tar.gz into dir and returns its files' paths by name.
func untar(t *testing.T, data []byte, dir string) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		p := filepath.Join(dir, filepath.Base(h.Name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files[filepath.Base(h.Name)] = p
	}
}
