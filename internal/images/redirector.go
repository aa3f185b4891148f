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
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/meshinit/meshinit/internal/images/oci"
	"github.com/meshinit/meshinit/redirect"
)

const (
	// RedirectorPath is the redirector's place in the image: the entrypoint.
	RedirectorPath = "/usr/local/bin/redirector"
	// DebianSuite is the Debian release iptables comes from.
	DebianSuite = "bookworm"
	// XtablesLock is the legacy backend's lock file, in the image so that
	// a read-only root file system needs no volume for it.
	XtablesLock = "/run/xtables.lock"
)

// RedirectorUser is the image's user: redirect.RedirectorUID and
// RedirectorGID.
var RedirectorUser = fmt.Sprintf("%d:%d", redirect.RedirectorUID, redirect.RedirectorGID)

// RedirectorCapabilities are the redirector's file capabilities,
// cap_net_admin,cap_net_raw+p: run as a non-root user, it starts with
// NET_ADMIN and NET_RAW permitted (not effective: it never uses them
// itself) and hands them to iptables as ambient capabilities. Under
// no_new_privs (allowPrivilegeEscalation: false) the kernel grants file
// capabilities only up to what the process held before execve, which is
// what the container's securityContext adds: runc puts those in the
// permitted set of the container's first process.
var RedirectorCapabilities = oci.FileCapabilities(false, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW)

// RedirectorOptions of BuildRedirector. The zero value of each field means
// its default.
type RedirectorOptions struct {
	// Platform the image is for. Default: the host's.
	Platform oci.Platform
	// Redirector is the redirector binary built for Platform, statically
	// linked (CGO_ENABLED=0). Required.
	Redirector string
	// Version is the org.opencontainers.image.version label. Default: "dev".
	Version string
	// Debian says where packages come from and are cached; its Platform is
	// set from Platform. Default Suite: DebianSuite.
	Debian oci.DebianOptions
	// Created is the image's creation time and every file's modification
	// time. Default: the Unix epoch, so equal inputs give equal digests.
	Created time.Time
}

func (o *RedirectorOptions) setDefaults() error {
	if o.Platform.GOARCH == "" {
		p, err := oci.HostPlatform()
		if err != nil {
			return err
		}
		o.Platform = p
	}
	if o.Redirector == "" {
		return errors.New("redirector image: Redirector (the binary) is required")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	o.Debian.Platform = o.Platform
	if o.Debian.Suite == "" {
		o.Debian.Suite = DebianSuite
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
	}
	return nil
}

// BuildRedirector assembles the redirector image for one platform in two
// layers: iptables with its libraries (changing rarely), then the
// redirector.
func BuildRedirector(ctx context.Context, opts RedirectorOptions) (v1.Image, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := oci.CheckStatic(opts.Redirector, opts.Platform); err != nil {
		return nil, err
	}
	sysroot, err := os.MkdirTemp("", "meshinit-sysroot-")
	if err != nil {
		return nil, fmt.Errorf("redirector image: %w", err)
	}
	defer os.RemoveAll(sysroot)

	base, err := IptablesFiles(ctx, opts.Debian, sysroot)
	if err != nil {
		return nil, err
	}
	base = append(base,
		oci.Dir("/run", 0o755),
		// The legacy backend's lock: iptables-legacy-restore opens it with
		// O_CREAT, which on a read-only root succeeds only when it exists,
		// and as a non-root user only when it may read it.
		oci.RegularFile(XtablesLock, 0o644, nil),
		oci.Dir("/tmp", fs.ModeSticky|0o777),
		oci.RegularFile("/etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n"+
			"redirector:x:%d:%d:meshinit redirector:/nonexistent:/usr/sbin/nologin\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", redirect.RedirectorUID, redirect.RedirectorGID))),
		oci.RegularFile("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")),
	)
	layerOpts := oci.LayerOptions{ModTime: opts.Created}
	baseLayer, err := oci.NewLayer(base, layerOpts)
	if err != nil {
		return nil, err
	}
	redirector := oci.CopyFile(RedirectorPath, opts.Redirector, 0o755)
	redirector.Xattrs = map[string]string{oci.XattrCapability: RedirectorCapabilities}
	appLayer, err := oci.NewLayer([]oci.File{redirector}, layerOpts)
	if err != nil {
		return nil, err
	}
	return oci.NewImage(oci.Config{
		Platform:   opts.Platform,
		Entrypoint: []string{RedirectorPath},
		User:       RedirectorUser,
		Labels: map[string]string{
			oci.LabelSource:      Source,
			oci.LabelVersion:     opts.Version,
			oci.LabelTitle:       "meshinit redirector",
			oci.LabelDescription: "Init container that redirects a pod's TCP traffic to its proxy with iptables",
		},
		Created: opts.Created,
	}, baseLayer, appLayer)
}

// IptablesFiles fetches iptables and its dependencies for opts.Platform,
// unpacks them into sysroot (an empty directory, kept by the caller until
// the files are written into a layer) and returns what the image needs:
//
//   - every program iptables ships in /usr/sbin and /usr/bin that is an ELF
//     file or a link to one (so the *-nft and *-legacy links and both
//     multi-call binaries; the iptables-apply shell scripts stay out),
//   - the extension modules directory /usr/lib/<triplet>/xtables,
//   - the shared libraries and loader those programs and modules need,
//   - the /etc files of netbase, which iptables depends on for protocol
//     and service names.
func IptablesFiles(ctx context.Context, opts oci.DebianOptions, sysroot string) ([]oci.File, error) {
	debs, err := oci.FetchDebs(ctx, opts, "iptables")
	if err != nil {
		return nil, err
	}
	if err := oci.ExtractDebs(ctx, debs, sysroot); err != nil {
		return nil, err
	}
	pkgPaths := map[string][]string{}
	for _, d := range debs {
		if d.Name != "iptables" && d.Name != "netbase" {
			continue
		}
		if pkgPaths[d.Name], err = d.Paths(ctx); err != nil {
			return nil, err
		}
	}
	if pkgPaths["iptables"] == nil || pkgPaths["netbase"] == nil {
		return nil, fmt.Errorf("redirector image: apt resolved no iptables or netbase package: %v", debs)
	}

	modules := path.Join("/usr/lib", opts.Platform.Triplet, "xtables")
	var keep []string
	for _, p := range pkgPaths["iptables"] {
		dir := path.Dir(p)
		if dir != "/usr/sbin" && dir != "/usr/bin" {
			continue
		}
		if ok, err := oci.IsELF(sysroot, p); err != nil {
			return nil, err
		} else if ok {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return nil, errors.New("redirector image: the iptables package has no programs")
	}
	elfPaths := append([]string(nil), keep...)
	entries, err := os.ReadDir(filepath.Join(sysroot, modules))
	if err != nil {
		return nil, fmt.Errorf("redirector image: iptables extension modules: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".so") {
			elfPaths = append(elfPaths, path.Join(modules, e.Name()))
		}
	}
	libs, err := oci.SharedLibraries(sysroot, opts.Platform, elfPaths...)
	if err != nil {
		return nil, err
	}
	keep = append(keep, modules)
	keep = append(keep, libs...)
	for _, p := range pkgPaths["netbase"] {
		if strings.HasPrefix(p, "/etc/") {
			keep = append(keep, p)
		}
	}
	return oci.FilesFromDir(sysroot, keep...)
}
