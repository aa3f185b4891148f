package images

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/meshinit/meshinit/internal/chart"
	"github.com/meshinit/meshinit/internal/images/oci"
)

const (
	// Registry is where every image is published (the chart's default
	// repositories live under it).
	Registry = "ghcr.io/meshinit"
	// Source is every image's org.opencontainers.image.source label.
	Source = "https://github.com/meshinit/meshinit"
)

// module is this module's path, the prefix of every package built.
const module = "github.com/meshinit/meshinit"

// A binary is a Go command built statically (CGO_ENABLED=0, -trimpath,
// stripped) for each architecture.
type binary struct {
	// pkg is the command's full package path, so that it builds from any
	// working directory inside the module.
	pkg string
	// versionVar receives the version with -ldflags -X ("" for none).
	versionVar string
}

var (
	redirectorBin = binary{pkg: module + "/initimage/cmd/redirector", versionVar: module + "/initimage.Version"}
	webhookBin    = binary{pkg: module + "/webhook/cmd/meshinit-webhook", versionVar: module + "/webhook/command.Version"}
	testserverBin = binary{pkg: module + "/internal/testproxy/cmd/testserver"}
)

// staticSpec is an image holding one static binary and nothing else but
// /etc/passwd, /etc/group and /tmp: no shell, no package manager.
type staticSpec struct {
	// name is the repository under Registry, e.g. "webhook".
	name string
	bin  binary
	// path is the binary's place in the image, the entrypoint.
	path string
	// cmd are the default arguments.
	cmd []string
	// user is "uid:gid", numeric so runAsNonRoot can check it.
	user               string
	title, description string
}

// Users every static image knows by name (for ps, logs, debugging).
const (
	nonrootUID = 65532
	proxyUID   = 1337
)

var (
	webhookImage = staticSpec{
		name: "webhook", bin: webhookBin, path: "/usr/local/bin/meshinit-webhook",
		user:        fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		title:       "meshinit webhook",
		description: "Mutating admission webhook that adds meshinit's redirect init container to the pods that opt in",
	}
	testAppImage = staticSpec{
		name: "test-app", bin: testserverBin, path: "/usr/local/bin/testserver",
		cmd:         []string{"-name", "app", "-listen", ":8080"},
		user:        fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		title:       "meshinit test app",
		description: "Test server answering with its name and the original destination; the app of meshinit's tests",
	}
	testProxyImage = staticSpec{
		name: "test-proxy", bin: testserverBin, path: "/usr/local/bin/testserver",
		cmd:         []string{"-name", "proxy", "-listen", ":15001,:15006"},
		user:        fmt.Sprintf("%d:%d", proxyUID, proxyUID),
		title:       "meshinit test proxy",
		description: "Test server answering with its name and the original destination, run as the proxy UID 1337; the proxy of meshinit's tests",
	}
	staticImages = []staticSpec{webhookImage, testAppImage, testProxyImage}
)

// Names lists every image Build builds, in build order: redirector,
// webhook, test-app, test-proxy.
func Names() []string {
	names := []string{"redirector"}
	for _, s := range staticImages {
		names = append(names, s.name)
	}
	return names
}

// Ref is the reference of image name at version: Registry/name:version.
func Ref(name, version string) string { return Registry + "/" + name + ":" + version }

// DefaultVersion is the chart's appVersion, so that the chart's default
// image references name exactly what Build builds.
func DefaultVersion() (string, error) {
	ch, err := chart.Load()
	if err != nil {
		return "", err
	}
	return ch.Metadata.AppVersion, nil
}

// buildStatic assembles spec's image for p from its binary bin in two
// layers: the user files (the same for every image), then the binary.
func buildStatic(spec staticSpec, p oci.Platform, bin, version string, created time.Time) (v1.Image, error) {
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
	app, err := oci.NewLayer([]oci.File{oci.CopyFile(spec.path, bin, 0o755)}, layerOpts)
	if err != nil {
		return nil, err
	}
	return oci.NewImage(oci.Config{
		Platform:   p,
		Entrypoint: []string{spec.path},
		Cmd:        spec.cmd,
		User:       spec.user,
		Labels: map[string]string{
			oci.LabelSource:      Source,
			oci.LabelVersion:     version,
			oci.LabelTitle:       spec.title,
			oci.LabelDescription: spec.description,
		},
		Created: created,
	}, base, app)
}

// build builds b for p into file. go build's output is quoted in the
// error; $GO, if set, is the go command.
func (b binary) build(ctx context.Context, p oci.Platform, version, file string) error {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	ldflags := "-s -w"
	if b.versionVar != "" {
		ldflags += fmt.Sprintf(" -X %s=%s", b.versionVar, version)
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", file, b.pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+p.GOARCH)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return fmt.Errorf("build %s for %s: %w\n%s", b.pkg, p, err, msg)
		}
		return fmt.Errorf("build %s for %s: %w", b.pkg, p, err)
	}
	return nil
}
