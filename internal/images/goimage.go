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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/meshinit/meshinit/internal/images/oci"
)

// A GoImage is an image holding one static Go program, its entrypoint, and
// nothing else but /etc/passwd, /etc/group and /tmp: no shell, no package
// manager. The webhook, test-app and test-proxy images are GoImages;
// tests build their own with BuildGoImage (e2e/cluster's sandbox image).
type GoImage struct {
	// Package is the program's full import path, so that it builds from
	// any directory inside the module, e.g.
	// "github.com/meshinit/meshinit/e2e/cmd/pause". Required.
	Package string
	// VersionVar receives the image's version with -ldflags -X, e.g.
	// "github.com/meshinit/meshinit/initimage.Version". Default: none.
	VersionVar string
	// Path is the program's place in the image. Default:
	// /usr/local/bin/<the last element of Package>.
	Path string
	// Cmd are the default arguments.
	Cmd []string
	// User is "uid:gid", numeric so runAsNonRoot can check it. Default:
	// "" (root).
	User string
	// Title and Description are the image's labels of those names.
	// Default: none.
	Title, Description string
}

func (g GoImage) binary() binary { return binary{pkg: g.Package, versionVar: g.VersionVar} }

func (g GoImage) path() string {
	if g.Path != "" {
		return g.Path
	}
	return "/usr/local/bin/" + path.Base(g.Package)
}

// image assembles g's image for p from its program bin in two layers: the
// user files (the same for every GoImage), then the program.
func (g GoImage) image(p oci.Platform, bin, version string, created time.Time) (v1.Image, error) {
	if err := oci.CheckStatic(bin, p); err != nil {
		return nil, err
	}
	layerOpts := oci.LayerOptions{ModTime: created}
	base, err := oci.NewLayer([]oci.File{
		oci.Dir("/tmp", fs.ModeSticky|0o777),
		oci.RegularFile("/etc/passwd", 0o644, []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nproxy:x:%d:%d:proxy:/nonexistent:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n",
			proxyUID, proxyUID, nonrootUID, nonrootUID))),
		oci.RegularFile("/etc/group", 0o644, []byte(fmt.Sprintf(
			"root:x:0:\nproxy:x:%d:\nnonroot:x:%d:\n", proxyUID, nonrootUID))),
	}, layerOpts)
	if err != nil {
		return nil, err
	}
	app, err := oci.NewLayer([]oci.File{oci.CopyFile(g.path(), bin, 0o755)}, layerOpts)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{oci.LabelSource: Source, oci.LabelVersion: version}
	for k, v := range map[string]string{oci.LabelTitle: g.Title, oci.LabelDescription: g.Description} {
		if v != "" {
			labels[k] = v
		}
	}
	return oci.NewImage(oci.Config{
		Platform:   p,
		Entrypoint: []string{g.path()},
		Cmd:        g.Cmd,
		User:       g.User,
		Labels:     labels,
		Created:    created,
	}, base, app)
}

// GoImageOptions of BuildGoImage. The zero value of each field means its
// default.
type GoImageOptions struct {
	// Ref names the image in the archive, e.g.
	// "localhost/meshinit-e2e/pause:v1" (normalized as oci.NormalizeRef
	// does). Required.
	Ref string
	// Version is the version label, and what VersionVar receives.
	// Default: "dev".
	Version string
	// Go is the go command. Default: $GO, else "go".
	Go string
}

// BuildGoImage builds g's program for the host's architecture and writes
// g's image, named o.Ref, as an OCI archive to file (atomically), ready for
// `ctr images import`. It is for tests' own images; Build builds
// meshinit's.
func BuildGoImage(ctx context.Context, g GoImage, file string, o GoImageOptions) error {
	if g.Package == "" || o.Ref == "" {
		return errors.New("images: GoImage.Package and GoImageOptions.Ref are required")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	p, err := oci.HostPlatform()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".goimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, path.Base(g.Package))
	if err := g.binary().build(ctx, o.Go, p, o.Version, bin); err != nil {
		return fmt.Errorf("image %s: %w", o.Ref, err)
	}
	img, err := g.image(p, bin, o.Version, time.Time{})
	if err != nil {
		return fmt.Errorf("image %s: %w", o.Ref, err)
	}
	_, err = write(file, o.Ref, img, io.Discard)
	return err
}

// A binary is a Go command built statically (CGO_ENABLED=0, -trimpath,
// stripped) for each architecture.
type binary struct {
	// pkg is the command's full package path, so that it builds from any
	// working directory inside the module.
	pkg string
	// versionVar receives the version with -ldflags -X ("" for none).
	versionVar string
}

// build builds b for p (Linux) into file with the go command goTool (""
// for $GO, else "go"). go build's output is quoted in the error.
func (b binary) build(ctx context.Context, goTool string, p oci.Platform, version, file string) error {
	return b.buildFor(ctx, goTool, "linux", p.GOARCH, version, file)
}

// buildFor is build for any goos and goarch.
func (b binary) buildFor(ctx context.Context, goTool, goos, goarch, version, file string) error {
	if goTool == "" {
		goTool = os.Getenv("GO")
	}
	if goTool == "" {
		goTool = "go"
	}
	ldflags := "-s -w"
	if b.versionVar != "" {
		ldflags += fmt.Sprintf(" -X %s=%s", b.versionVar, version)
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", file, b.pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return fmt.Errorf("build %s for %s/%s: %w\n%s", b.pkg, goos, goarch, err, msg)
		}
		return fmt.Errorf("build %s for %s/%s: %w", b.pkg, goos, goarch, err)
	}
	return nil
}
