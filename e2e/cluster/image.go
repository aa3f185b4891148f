package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"

	"github.com/meshinit/meshinit/internal/images/oci"
)

// GoImage is an image holding one static Go program as its entrypoint.
type GoImage struct {
	// Package is the program's import path, e.g.
	// "github.com/meshinit/meshinit/e2e/cmd/pause". Required.
	Package string
	// Ref names the image, e.g. "localhost/meshinit-e2e/pause:v1"
	// (normalized as oci.NormalizeRef does). Required.
	Ref string
	// Cmd are the program's default arguments.
	Cmd []string
	// Go is the go command. Default: "go".
	Go string
	// Dir is where the go command runs: inside the module that holds
	// Package. Default: the current directory.
	Dir string
}

// BuildGoImage builds Package for the host's architecture (CGO_ENABLED=0,
// so static) and writes an image holding it at /<name>, its entrypoint,
// as an OCI archive at file, ready for Cluster.LoadImage.
func BuildGoImage(ctx context.Context, img GoImage, file string) error {
	if img.Package == "" || img.Ref == "" {
		return errors.New("image: Package and Ref are required")
	}
	if img.Go == "" {
		img.Go = "go"
	}
	platform, err := oci.HostPlatform()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(file), ".goimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	name := path.Base(img.Package)
	bin := filepath.Join(tmp, name)
	build := exec.CommandContext(ctx, img.Go, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, img.Package)
	build.Dir = img.Dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+platform.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("image %s: go build %s: %w\n%s", img.Ref, img.Package, err, out)
	}
	layer, err := oci.NewLayer([]oci.File{
		oci.CopyFile("/"+name, bin, 0o755),
		oci.Dir("/tmp", fs.ModeSticky|0o777),
	}, oci.LayerOptions{})
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	image, err := oci.NewImage(oci.Config{
		Platform:   platform,
		Entrypoint: []string{"/" + name},
		Cmd:        img.Cmd,
	}, layer)
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	out, err := os.Create(filepath.Join(tmp, "image.oci.tar"))
	if err != nil {
		return err
	}
	if err := oci.WriteArchive(out, img.Ref, image); err != nil {
		out.Close()
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), file)
}
