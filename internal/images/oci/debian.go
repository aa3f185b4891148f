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

package oci

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// DebianOptions say which Debian archive packages come from and where they
// are cached. The zero value of each field means its default.
type DebianOptions struct {
	// Platform whose packages are fetched; packages of another architecture
	// than the host's need no change to the host (apt runs on a private
	// state directory). Required.
	Platform Platform
	// Suite is the Debian release, e.g. "bookworm". Default: the host's
	// VERSION_CODENAME from /etc/os-release. Recipes should set it, so the
	// image does not change with the build host.
	Suite string
	// Mirror is the main archive. Default: "http://deb.debian.org/debian".
	Mirror string
	// SecurityMirror carries <suite>-security. Default:
	// "http://deb.debian.org/debian-security".
	SecurityMirror string
	// Keyring verifies both archives. Default:
	// "/usr/share/keyrings/debian-archive-keyring.gpg".
	Keyring string
	// CacheDir holds apt's package lists (apt/<suite>-<arch>/) and the
	// downloaded packages (debs/<arch>/), reused by later builds. Default:
	// $MESHINIT_CACHE, else "/var/cache/meshinit".
	CacheDir string
	// Refresh fetches the package lists again before resolving, to pick up
	// new (security) versions. Default: false, lists are fetched only when
	// missing or stale, so builds repeat exactly until refreshed.
	Refresh bool
	// Log receives apt's output. Default: discarded (it is quoted in errors).
	Log io.Writer
}

func (o *DebianOptions) setDefaults() error {
	if o.Platform.DebianArch == "" {
		return errors.New("debian: Platform is required")
	}
	if o.Suite == "" {
		codename, err := hostCodename("/etc/os-release")
		if err != nil {
			return fmt.Errorf("debian: Suite not set and the host's is unknown: %w", err)
		}
		o.Suite = codename
	}
	if o.Mirror == "" {
		o.Mirror = "http://deb.debian.org/debian"
	}
	if o.SecurityMirror == "" {
		o.SecurityMirror = "http://deb.debian.org/debian-security"
	}
	if o.Keyring == "" {
		o.Keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// DefaultCacheDir is $MESHINIT_CACHE, else /var/cache/meshinit.
func DefaultCacheDir() string {
	if d := os.Getenv("MESHINIT_CACHE"); d != "" {
		return d
	}
	return "/var/cache/meshinit"
}

// Deb is one downloaded Debian binary package.
type Deb struct {
	Name    string
	Version string
	// Arch is the package's architecture: the platform's, or "all".
	Arch string
	// Path is the .deb file in the cache.
	Path string
}

// FetchDebs downloads the named packages and everything they depend on
// (Depends and Pre-Depends, not Recommends), as apt would install them on an
// empty system, into the cache, reusing packages already there. It returns
// them in apt's install order. The network is used only for what the cache
// lacks: package lists are fetched when missing (or Refresh is set), or
// again when a listed package has left the archive.
func FetchDebs(ctx context.Context, opts DebianOptions, names ...string) ([]Deb, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("debian: no package names given")
	}
	a := &apt{opts: opts, root: filepath.Join(opts.CacheDir, "apt", opts.Suite+"-"+opts.Platform.DebianArch)}
	debDir := filepath.Join(opts.CacheDir, "debs", opts.Platform.DebianArch)
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return nil, fmt.Errorf("debian: create cache: %w", err)
	}
	unlock, err := a.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := a.setup(); err != nil {
		return nil, err
	}

	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 || opts.Refresh || !a.hasLists() {
			if err := a.run(ctx, "", "update"); err != nil {
				return nil, err
			}
		}
		debs, err := a.resolve(ctx, names)
		if err == nil {
			err = a.download(ctx, debDir, debs)
		}
		if err == nil {
			return debs, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// apt runs apt-get on a private root under the cache: its own sources,
// lists, an empty dpkg status and the target architecture, so the host's
// apt configuration and dpkg architectures are neither used nor changed.
type apt struct {
	opts DebianOptions
	root string
}

func (a *apt) conf() string { return filepath.Join(a.root, "etc/apt/apt.conf") }

func (a *apt) setup() error {
	for _, d := range []string{"etc/apt/apt.conf.d", "etc/apt/sources.list.d", "etc/apt/preferences.d",
		"etc/apt/trusted.gpg.d", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial",
		"var/lib/dpkg", "var/log/apt"} {
		if err := os.MkdirAll(filepath.Join(a.root, d), 0o755); err != nil {
			return fmt.Errorf("debian: create apt root: %w", err)
		}
	}
	arch := a.opts.Platform.DebianArch
	conf := fmt.Sprintf(`Dir "%[1]s/";
Dir::State::status "%[1]s/var/lib/dpkg/status";
APT::Architecture "%[2]s";
APT::Architectures { "%[2]s"; };
APT::Install-Recommends "false";
APT::Sandbox::User "root";
Acquire::Languages "none";
`, a.root, arch)
	k, m, s, suite := a.opts.Keyring, a.opts.Mirror, a.opts.SecurityMirror, a.opts.Suite
	sources := fmt.Sprintf(`deb [signed-by=%[1]s] %[2]s %[4]s main
deb [signed-by=%[1]s] %[2]s %[4]s-updates main
deb [signed-by=%[1]s] %[3]s %[4]s-security main
`, k, m, s, suite)
	files := map[string]string{
		"etc/apt/apt.conf":     conf,
		"etc/apt/sources.list": sources,
		"var/lib/dpkg/status":  "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(a.root, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("debian: write %s: %w", name, err)
		}
	}
	return nil
}

// lock serializes users of one apt root (parallel test binaries, builds).
func (a *apt) lock() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(a.root), 0o755); err != nil {
		return nil, fmt.Errorf("debian: create cache: %w", err)
	}
	f, err := os.OpenFile(a.root+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("debian: open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("debian: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

func (a *apt) hasLists() bool {
	m, _ := filepath.Glob(filepath.Join(a.root, "var/lib/apt/lists/*_Packages*"))
	return len(m) > 0
}

// run runs apt-get with the private configuration, in dir if not empty.
func (a *apt) run(ctx context.Context, dir string, args ...string) error {
	_, err := a.output(ctx, dir, args...)
	return err
}

func (a *apt) output(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-q"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "APT_CONFIG="+a.conf(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, a.opts.Log)
	cmd.Stderr = io.MultiWriter(&stderr, a.opts.Log)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("debian: apt-get %s (%s): %w: %s", strings.Join(args, " "),
			a.opts.Platform.DebianArch, err, tail(stderr.String()+stdout.String(), 15))
	}
	return stdout.Bytes(), nil
}

// resolve asks apt which packages installing names on an empty system takes.
func (a *apt) resolve(ctx context.Context, names []string) ([]Deb, error) {
	out, err := a.output(ctx, "", append([]string{"-s", "install"}, names...)...)
	if err != nil {
		return nil, err
	}
	debs, err := parseSimulatedInstall(out)
	if err != nil {
		return nil, fmt.Errorf("debian: resolve %v: %w", names, err)
	}
	return debs, nil
}

var instLine = regexp.MustCompile(`^Inst (\S+) \((\S+) .*\[([a-z0-9]+)\]\)`)

// parseSimulatedInstall reads the "Inst" lines of apt-get -s install.
func parseSimulatedInstall(out []byte) ([]Deb, error) {
	var debs []Deb
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := instLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		debs = append(debs, Deb{Name: strings.SplitN(m[1], ":", 2)[0], Version: m[2], Arch: m[3]})
	}
	if len(debs) == 0 {
		return nil, errors.New("apt planned no package installs")
	}
	return debs, nil
}

// debFileName is the name apt gives a downloaded package.
func debFileName(d Deb) string {
	return fmt.Sprintf("%s_%s_%s.deb", d.Name, strings.ReplaceAll(d.Version, ":", "%3a"), d.Arch)
}

// download fills in each Deb's Path, downloading what the cache lacks.
func (a *apt) download(ctx context.Context, debDir string, debs []Deb) error {
	var missing []string
	for i := range debs {
		debs[i].Path = filepath.Join(debDir, debFileName(debs[i]))
		if _, err := os.Stat(debs[i].Path); err != nil {
			missing = append(missing, debs[i].Name+"="+debs[i].Version)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp(debDir, ".download-")
	if err != nil {
		return fmt.Errorf("debian: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := a.run(ctx, tmp, append([]string{"download"}, missing...)...); err != nil {
		return err
	}
	for _, d := range debs {
		if _, err := os.Stat(d.Path); err == nil {
			continue
		}
		if err := os.Rename(filepath.Join(tmp, filepath.Base(d.Path)), d.Path); err != nil {
			return fmt.Errorf("debian: apt-get download left no %s: %w", filepath.Base(d.Path), err)
		}
	}
	return nil
}

// Extract unpacks the package's files (not its maintainer scripts) into dir,
// as dpkg would install them under dir.
func (d Deb) Extract(ctx context.Context, dir string) error {
	out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", d.Path, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("debian: extract %s: %w: %s", d.Path, err, tail(string(out), 5))
	}
	return nil
}

// Paths lists the absolute paths the package installs (directories too),
// in the package's order.
func (d Deb) Paths(ctx context.Context) ([]string, error) {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", d.Path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("debian: list %s: %w", d.Path, err)
	}
	var paths []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = cmd.Wait()
			return nil, fmt.Errorf("debian: list %s: %w: %s", d.Path, err, stderr.String())
		}
		if p := path.Clean("/" + h.Name); p != "/" {
			paths = append(paths, p)
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("debian: list %s: %w: %s", d.Path, err, stderr.String())
	}
	return paths, nil
}

// ExtractDebs unpacks all packages into dir, in order.
func ExtractDebs(ctx context.Context, debs []Deb, dir string) error {
	for _, d := range debs {
		if err := d.Extract(ctx, dir); err != nil {
			return err
		}
	}
	return nil
}

func hostCodename(osRelease string) (string, error) {
	b, err := os.ReadFile(osRelease)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok && strings.Trim(v, `"`) != "" {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", fmt.Errorf("no VERSION_CODENAME in %s", osRelease)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
