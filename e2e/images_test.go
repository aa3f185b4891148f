package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/meshinit/meshinit/e2e/cluster"
	redirectorimage "github.com/meshinit/meshinit/initimage/image"
	"github.com/meshinit/meshinit/internal/ociimage"
)

// The images the tests build and load; pods run them with pullPolicy Never.
const (
	imageRepo = "localhost/meshinit-e2e/"
	imageTag  = "e2e"
	// redirectorRef is initimage/image's recipe.
	redirectorRef = imageRepo + "redirector:" + imageTag
	// webhookRef holds webhook/cmd/meshinit-webhook.
	webhookRef = imageRepo + "webhook:" + imageTag
	// toolboxRef holds /testserver (the entrypoint: app and proxy) and
	// /dial (a client to `kubectl exec`).
	toolboxRef = imageRepo + "toolbox:" + imageTag
)

// buildImages builds the three images into dir, concurrently, and loads
// them into the cluster.
func buildImages(ctx context.Context, e *env, dir string, logf func(string, ...any)) error {
	builds := map[string]func(file string) error{
		"redirector": func(file string) error { return buildRedirector(ctx, dir, file) },
		"webhook": func(file string) error {
			return cluster.BuildGoImage(ctx, cluster.GoImage{Package: "github.com/meshinit/meshinit/webhook/cmd/meshinit-webhook", Ref: webhookRef}, file)
		},
		"toolbox": func(file string) error { return buildToolbox(ctx, dir, file) },
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(builds))
	for name, build := range builds {
		wg.Go(func() {
			began := time.Now()
			file := filepath.Join(dir, name+".oci.tar")
			if err := build(file); err != nil {
				errs <- fmt.Errorf("image %s: %w", name, err)
				return
			}
			if err := e.loadImage(ctx, file); err != nil {
				errs <- err
				return
			}
			logf("timing: image %s built and loaded in %.1fs", name, time.Since(began).Seconds())
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// goBuild builds a static program for the host into dir.
func goBuild(ctx context.Context, dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, goCmd(), "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

func goCmd() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

func buildRedirector(ctx context.Context, dir, file string) error {
	bin, err := goBuild(ctx, dir, "github.com/meshinit/meshinit/initimage/cmd/redirector")
	if err != nil {
		return err
	}
	img, err := redirectorimage.Build(ctx, redirectorimage.Options{Redirector: bin, Version: imageTag})
	if err != nil {
		return err
	}
	return writeArchive(file, redirectorRef, img)
}

func buildToolbox(ctx context.Context, dir, file string) error {
	var files []ociimage.File
	for _, pkg := range []string{"internal/testproxy/cmd/testserver", "e2e/cmd/dial"} {
		bin, err := goBuild(ctx, dir, "github.com/meshinit/meshinit/"+pkg)
		if err != nil {
			return err
		}
		files = append(files, ociimage.CopyFile("/"+filepath.Base(bin), bin, 0o755))
	}
	files = append(files, ociimage.Dir("/tmp", fs.ModeSticky|0o777))
	layer, err := ociimage.NewLayer(files, ociimage.LayerOptions{})
	if err != nil {
		return err
	}
	platform, err := ociimage.HostPlatform()
	if err != nil {
		return err
	}
	img, err := ociimage.NewImage(ociimage.Config{Platform: platform, Entrypoint: []string{"/testserver"}}, layer)
	if err != nil {
		return err
	}
	return writeArchive(file, toolboxRef, img)
}

func writeArchive(file, ref string, a ociimage.Artifact) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := ociimage.WriteArchive(f, ref, a); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
