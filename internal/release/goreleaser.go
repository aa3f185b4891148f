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

package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ProjectURL is the project's repository, the git remote GoReleaser is
// given when the checkout has none.
const ProjectURL = "https://github.com/meshinit/meshinit"

// PluginOptions say how GoReleaser builds the plugin's release.
type PluginOptions struct {
	// GoReleaser is the goreleaser binary (hack/goreleaser/build.sh).
	GoReleaser string
	// Root is the repository's directory, which holds .goreleaser.yaml.
	Root string
	// Version is the release's version, x.y.z; its tag is v<Version>.
	Version string
	// Dist is the directory GoReleaser writes to (it is emptied).
	Dist string
	// Platforms, if set, replace the config's (linux and darwin, amd64
	// and arm64), as "goos/goarch", for a quick trial.
	Platforms []string
	// Log receives GoReleaser's output.
	Log *os.File
}

// Plugin runs GoReleaser on the repository's .goreleaser.yaml, with dist
// set to o.Dist: the plugin's archives, checksums.txt, the krew manifest
// (krew/meshinit.yaml) and CHANGELOG.md. Nothing is uploaded (skip
// publish). The release's tag need not exist yet: GORELEASER_CURRENT_TAG
// names it, and the changelog runs from the newest tag before HEAD, or
// from the first commit when there is none.
func Plugin(ctx context.Context, o PluginOptions) error {
	raw, err := os.ReadFile(filepath.Join(o.Root, ".goreleaser.yaml"))
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("release: .goreleaser.yaml: %w", err)
	}
	cfg["dist"] = o.Dist
	if len(o.Platforms) > 0 {
		var goos, goarch []string
		for _, p := range o.Platforms {
			system, arch, ok := strings.Cut(p, "/")
			if !ok {
				return fmt.Errorf("release: platform %q is not goos/goarch", p)
			}
			if !slices.Contains(goos, system) {
				goos = append(goos, system)
			}
			if !slices.Contains(goarch, arch) {
				goarch = append(goarch, arch)
			}
		}
		for _, b := range cfg["builds"].([]any) {
			b.(map[string]any)["goos"], b.(map[string]any)["goarch"] = goos, goarch
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.Dist), 0o755); err != nil {
		return err
	}
	config := o.Dist + ".goreleaser.yaml"
	if err := os.WriteFile(config, out, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.GoReleaser, "release", "--clean", "--skip=publish,announce,validate", "--config", config)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "GORELEASER_CURRENT_TAG=v"+o.Version)
	if prev := previousTag(o.Root); prev != "" && prev != "v"+o.Version {
		cmd.Env = append(cmd.Env, "GORELEASER_PREVIOUS_TAG="+prev)
	}
	if remotes, err := exec.Command("git", "-C", o.Root, "remote").Output(); err == nil && len(bytes.TrimSpace(remotes)) == 0 {
		// GoReleaser reads the remote's URL and fails without one (a
		// local clone, a worktree of one): name the project's, for this
		// command only.
		cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url", "GIT_CONFIG_VALUE_0="+ProjectURL)
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if o.Log != nil {
		cmd.Stdout, cmd.Stderr = o.Log, o.Log
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("release: goreleaser: %w\n%s", err, buf.String())
	}
	return nil
}

// previousTag is the newest tag reachable from HEAD, "" when there is none.
func previousTag(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--tags", "--abbrev=0", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
