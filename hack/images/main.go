// Command images builds meshinit's container images as OCI archives without
// a container daemon (`make images`): for each architecture it builds the
// static redirector, assembles its image (initimage/image) and writes
// _output/images/redirector-<arch>.oci.tar; with several architectures also
// redirector.oci.tar, one multi-platform index of them all. Load one with
// `ctr -n k8s.io images import <file>`.
//
// Output is reproducible: the same sources, version and Debian packages
// give the same digests. SOURCE_DATE_EPOCH, if set, stamps the images.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/meshinit/meshinit/initimage/image"
	"github.com/meshinit/meshinit/internal/ociimage"
)

// versionVar receives the version through -ldflags -X; a missing variable
// makes -X a no-op, so the build never fails on it.
const versionVar = "github.com/meshinit/meshinit/initimage/command.Version"

func main() {
	archs := flag.String("arch", runtime.GOARCH, "comma-separated architectures: "+strings.Join(ociimage.SupportedArchs(), ", "))
	version := flag.String("version", "", "image version and tag (default: git describe --tags --always --dirty, else dev)")
	out := flag.String("out", "_output/images", "directory the archives are written to")
	refresh := flag.Bool("refresh", false, "fetch Debian's package lists again first (new security updates); otherwise the cached lists are reused")
	verbose := flag.Bool("v", false, "show apt's output")
	flag.Parse()
	if err := run(context.Background(), strings.Split(*archs, ","), *version, *out, *refresh, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, archs []string, version, out string, refresh, verbose bool) error {
	if version == "" {
		version = gitVersion()
	}
	created, err := ociimage.SourceDateEpoch()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "meshinit-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	ref := image.Ref(version)
	var adds []mutate.IndexAddendum
	for _, arch := range archs {
		p, err := ociimage.LookupPlatform(strings.TrimSpace(arch))
		if err != nil {
			return err
		}
		bin := filepath.Join(tmp, "redirector-"+p.GOARCH)
		if err := buildRedirector(ctx, p, version, bin); err != nil {
			return err
		}
		opts := image.Options{Platform: p, Redirector: bin, Version: version, Created: created}
		opts.Debian.Refresh = refresh
		if verbose {
			opts.Debian.Log = os.Stderr
		}
		img, err := image.Build(ctx, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if err := write(filepath.Join(out, "redirector-"+p.GOARCH+".oci.tar"), ref, img); err != nil {
			return err
		}
		op := p.OCI()
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &op}})
	}
	if len(adds) > 1 {
		idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
		return write(filepath.Join(out, "redirector.oci.tar"), ref, idx)
	}
	return nil
}

// buildRedirector builds the static redirector for p into bin.
func buildRedirector(ctx context.Context, p ociimage.Platform, version, bin string) error {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath",
		"-ldflags", fmt.Sprintf("-s -w -X %s=%s", versionVar, version),
		"-o", bin, "./initimage/cmd/redirector")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+p.GOARCH)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build redirector for %s: %w", p, err)
	}
	return nil
}

// write writes the archive atomically and prints its path, digest and size.
func write(file, ref string, a ociimage.Artifact) error {
	f, err := os.CreateTemp(filepath.Dir(file), ".tmp-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := ociimage.WriteArchive(f, ref, a); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		return err
	}
	d, err := a.Digest()
	if err != nil {
		return err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%s\t%s\t%d bytes\n", file, ref, d, fi.Size())
	return nil
}

// gitVersion is `git describe --tags --always --dirty` made a valid tag,
// or "dev" outside a git checkout.
func gitVersion() string {
	out, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		return "dev"
	}
	return tagSafe(string(out))
}

// tagSafe makes s a valid image tag: [A-Za-z0-9_.-], at most 128
// characters, "dev" when empty.
func tagSafe(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "dev"
	}
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, s)
}
