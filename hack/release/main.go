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

// Command release is `make release VERSION=x.y.z REGISTRY=host/path`:
//
//	go run ./hack/release -version 1.2.3 -registry registry.example/meshinit [-arch amd64,arm64] [-out _output/release]
//
// It builds meshinit's images for -arch and pushes each multi-platform
// index to <registry>/<image>:<version>, packages the chart with every
// image pinned to the digest the registry holds and pushes it to
// oci://<registry>/charts/meshinit, then runs GoReleaser (.goreleaser.yaml, built
// by hack/goreleaser/build.sh unless -goreleaser names a binary) for the
// kubectl plugin's archives, checksums, krew manifest and the changelog.
// It writes <out>/chart/meshinit-<version>.tgz, <out>/plugin/ and
// <out>/release.txt (what was pushed, by digest), and prints the install
// command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/images"
	"github.com/meshinit/meshinit/internal/release"
)

// semver is x.y.z with an optional pre-release, as Helm needs a chart's
// version to be.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

type options struct {
	version, registry, out, goreleaser string
	archs, pluginPlatforms             []string
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, output io.Writer) (options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(output)
	var o options
	fs.StringVar(&o.version, "version", "", "the release's version, x.y.z (required): the chart's version and appVersion, the images' tag, the plugin's version")
	fs.StringVar(&o.registry, "registry", "", "registry and path the images and the chart are pushed to, e.g. ghcr.io/meshinit (required)")
	fs.StringVar(&o.out, "out", "_output/release", "directory the chart, the plugin's archives and release.txt are written to")
	fs.StringVar(&o.goreleaser, "goreleaser", "", "goreleaser binary (default: built by hack/goreleaser/build.sh)")
	archs := fs.String("arch", "amd64,arm64", "comma-separated architectures of the images")
	plugin := fs.String("plugin-platforms", "", "goos/goarch list for the plugin instead of .goreleaser.yaml's, for a quick trial")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.archs, o.pluginPlatforms = split(*archs), split(*plugin)
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case !semver.MatchString(o.version):
		err = fmt.Errorf("-version %q: want x.y.z (semantic version, no leading v)", o.version)
	case o.registry == "":
		err = errors.New("-registry: required, e.g. ghcr.io/meshinit")
	}
	if err != nil {
		fmt.Fprintln(output, err)
		fs.Usage()
	}
	return o, err
}

func run(ctx context.Context, o options, stdout io.Writer) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if o.goreleaser == "" {
		// Built first: a cold build takes minutes, and its failure should
		// come before anything is pushed.
		b, err := exec.CommandContext(ctx, filepath.Join(root, "hack/goreleaser/build.sh")).Output()
		if err != nil {
			return fmt.Errorf("hack/goreleaser/build.sh: %w", err)
		}
		o.goreleaser = strings.TrimSpace(string(b))
	}
	pushed, err := release.PushImages(ctx, o.registry, o.version, filepath.Join(out, "images"), o.archs, images.Options{Log: stdout})
	if err != nil {
		return err
	}
	ch, err := charts.Load()
	if err != nil {
		return err
	}
	if err := release.PinChart(ch, o.version, pushed); err != nil {
		return err
	}
	file, err := release.PackageChart(ch, filepath.Join(out, "chart"))
	if err != nil {
		return err
	}
	chartRef, err := release.PushChart(file, chartRegistry(o.registry))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed\t%s\n", chartRef)
	if err := release.Plugin(ctx, release.PluginOptions{
		GoReleaser: o.goreleaser, Root: root, Version: o.version, Dist: filepath.Join(out, "plugin"), Platforms: o.pluginPlatforms, Log: os.Stderr,
	}); err != nil {
		return err
	}
	var lines []string
	for name, im := range pushed {
		lines = append(lines, fmt.Sprintf("image\t%s\t%s@%s", name, im.Repository, im.Digest))
	}
	slices.Sort(lines)
	lines = append(lines, "chart\t"+chartRef, "archive\t"+file)
	if err := os.WriteFile(filepath.Join(out, "release.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "install:\thelm install meshinit oci://%s/meshinit --version %s --namespace meshinit-system --create-namespace\n", chartRegistry(o.registry), o.version)
	return nil
}

// chartRegistry is where the chart is pushed: <registry>/charts, so the
// chart's repository is apart from the images' (oci://ghcr.io/meshinit/charts/meshinit
// for ghcr.io/meshinit, as docs/install.md names it).
func chartRegistry(registry string) string { return strings.TrimSuffix(registry, "/") + "/charts" }

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
