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

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshinit/meshinit/hack/docs"
	"github.com/meshinit/meshinit/internal/images"
	"github.com/meshinit/meshinit/internal/poll"
)

// testREADMETranscripts runs README.md's console transcripts (```console
// blocks: "$ kubectl ..." lines, each followed by its output) on a cluster
// where meshinit is installed, as a reader would after installing it, one
// command after another, and fails where a command's output does not match
// what the README shows (docs.Match: "..." stands for lines or text that
// vary). TestDemo calls it after the demo, on the demo's cluster and
// installation, so it costs no install of its own. hack/docs's
// TestREADMECommands checks that these blocks hold only kubectl commands.
//
// A command with --dry-run=server stores nothing, so it is retried for up
// to a minute until its output matches: the API server's policy informer
// sees a RedirectPolicy created just before after a moment (a reader
// typing the next command does not notice).
func testREADMETranscripts(t *testing.T, ctx context.Context, e *env) {
	src, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The README shows a default installation, whose RedirectPolicy
	// default requires every port (interception: Required); the demo and
	// the harness install it AllowOptOut for their own steps.
	interception := func(to string) {
		e.must(t, ctx, "-n", releaseNamespace, "patch", "redirectpolicy", "default", "--type", "merge", "-p", `{"spec":{"interception":"`+to+`"}}`)
	}
	interception("Required")
	defer interception("AllowOptOut")
	ran := 0
	for _, b := range docs.Blocks(string(src)) {
		if b.Lang != "console" {
			continue
		}
		steps, err := docs.Transcript(b)
		if err != nil {
			t.Fatalf("README.md: %v", err)
		}
		for _, s := range steps {
			if !strings.HasPrefix(s.Command, "kubectl ") {
				t.Fatalf("README.md line %d: console command %q is not kubectl; only kubectl commands are run here", b.Line, s.Command)
			}
			cmd := s.Command
			if ns, ok := strings.CutPrefix(cmd, "kubectl create namespace "); ok {
				t.Cleanup(func() {
					_, _ = e.Kubectl(context.Background(), "", "delete", "namespace", ns, "--ignore-not-found", "--wait=false")
				})
			}
			if e.Registry != "" {
				// The images are in the test registry, not where releases
				// put them.
				cmd = strings.ReplaceAll(cmd, images.Registry+"/", strings.TrimSuffix(e.Registry, "/")+"/")
			}
			run := func(ctx context.Context) error {
				c := exec.CommandContext(ctx, "bash", "-c", cmd)
				c.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig, "PATH="+filepath.Dir(e.KubectlBin)+":"+os.Getenv("PATH"))
				out, _ := c.CombinedOutput() // a refusal's exit status is shown as its output
				return docs.Match(s.Output, string(out))
			}
			err := run(ctx)
			if err != nil && strings.Contains(cmd, "--dry-run=server") {
				err = poll.Until(ctx, time.Second, time.Minute, run)
			}
			if err != nil {
				t.Errorf("README.md transcript at line %d: $ %s\n%v", b.Line, s.Command, err)
			}
			ran++
		}
	}
	if ran == 0 {
		t.Error("README.md has no console transcript to run")
	}
	t.Logf("ran README.md's %d transcript commands", ran)
}
