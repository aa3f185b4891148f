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
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/meshinit/meshinit/internal/images/oci"
)

const testVersion = "v0.0.0-imagetest"

// TestRedirectorVersion builds the redirector as Build does and checks that
// `redirector version` prints the version Build sets with -ldflags -X: the
// variable redirectorBin names exists.
func TestRedirectorVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	p, err := oci.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildRedirector(t, p, filepath.Join(t.TempDir(), "redirector"))
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != testVersion {
		t.Errorf("redirector version: %q, %v; want %q", out, err, testVersion)
	}
}

// TestRedirectorImage builds the redirector image twice from the same inputs, checks
// both archives are identical, then unpacks the image and runs its iptables
// programs and the redirector itself with chroot in fresh network
// namespaces, as the init container would run them.
func TestRedirectorImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root (apt-get into the package cache, chroot, network namespaces); CI runs as root")
	}
	ctx := context.Background()
	p, err := oci.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildRedirector(t, p, filepath.Join(dir, "redirector"))
	opts := RedirectorOptions{Platform: p, Redirector: bin, Version: testVersion}

	archives := make([]string, 2)
	digests := make([]v1.Hash, 2)
	for i := range archives {
		archives[i] = filepath.Join(dir, fmt.Sprintf("redirector-%d.oci.tar", i))
		digests[i] = buildArchive(t, ctx, opts, archives[i])
	}

	t.Run("reproducible", func(t *testing.T) {
		if digests[0] != digests[1] {
			t.Errorf("two builds, two digests: %s and %s", digests[0], digests[1])
		}
		a, b := fileSum(t, archives[0]), fileSum(t, archives[1])
		if a != b {
			t.Errorf("two builds, two archives: sha256 %s and %s", a, b)
		}
		t.Logf("image %s, archive sha256:%s", digests[0], a)
	})

	img, rootfs := unpackArchive(t, archives[0], Ref("redirector", testVersion), filepath.Join(dir, "unpacked"))

	t.Run("config", func(t *testing.T) {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if !slices.Equal(c.Entrypoint, []string{RedirectorPath}) || c.User != "65532:0" || cf.Architecture != p.GOARCH || cf.OS != "linux" {
			t.Errorf("entrypoint %q user %q platform %s/%s", c.Entrypoint, c.User, cf.OS, cf.Architecture)
		}
		if c.Labels[oci.LabelSource] != Source || c.Labels[oci.LabelVersion] != testVersion {
			t.Errorf("labels %v", c.Labels)
		}
		if !slices.Contains(c.Env, "PATH="+oci.DefaultPath) {
			t.Errorf("env %q lacks PATH", c.Env)
		}
		layers, _ := img.Layers()
		var total int64
		for _, l := range layers {
			s, _ := l.Size()
			total += s
		}
		t.Logf("%d layers, %d bytes compressed", len(layers), total)
	})

	t.Run("contents", func(t *testing.T) { checkContents(t, rootfs, p) })

	t.Run("file capabilities and lock file", func(t *testing.T) {
		buf := make([]byte, 64)
		n, err := unix.Getxattr(filepath.Join(rootfs, RedirectorPath), oci.XattrCapability, buf)
		if err != nil || string(buf[:n]) != oci.FileCapabilities(false, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW) {
			t.Errorf("%s: %s %x, %v; want cap_net_admin,cap_net_raw+p", RedirectorPath, oci.XattrCapability, buf[:n], err)
		}
		if fi, err := os.Lstat(filepath.Join(rootfs, XtablesLock)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v; want a regular file, 0644", XtablesLock, fi, err)
		}
	})

	// What a container runtime adds: /proc and /dev/null.
	must(t, os.MkdirAll(filepath.Join(rootfs, "proc"), 0o555))
	must(t, os.MkdirAll(filepath.Join(rootfs, "dev"), 0o755))
	must(t, os.WriteFile(filepath.Join(rootfs, "dev/null"), nil, 0o666))

	t.Run("iptables runs from the image", func(t *testing.T) {
		for _, mode := range []string{"nft", "legacy"} {
			for _, fam := range []string{"iptables", "ip6tables"} {
				prog := "/usr/sbin/" + fam + "-" + mode
				t.Run(fam+"-"+mode, func(t *testing.T) {
					run := inNetns(t, rootfs)
					run.ok(t, prog+"-save")
					run.ok(t, prog, "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "--dport", "1", "-j", "REDIRECT", "--to-ports", "2")
					run.okIn(t, restoreScript(fam), prog+"-restore", "--noflush")
					saved := run.ok(t, prog+"-save", "-t", "nat")
					for _, rule := range []string{
						"-A OUTPUT -p tcp -m tcp --dport 1 -j REDIRECT --to-ports 2",
						"-A MESHINIT_IMAGE_TEST -m owner --uid-owner 1337 -m comment --comment \"image test: proxy\" -j RETURN",
						"-A MESHINIT_IMAGE_TEST -p tcp -m multiport --dports 80,443 -j REDIRECT --to-ports 15001",
					} {
						if !strings.Contains(saved, rule) {
							t.Errorf("%s-save lacks %q:\n%s", prog, rule, saved)
						}
					}
				})
			}
		}
	})

	t.Run("as the init container: runc, non-root, read-only root, no_new_privs", func(t *testing.T) {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"nft", "legacy"} {
			t.Run(mode, func(t *testing.T) {
				ns := inNetns(t, rootfs)
				// A legacy rule outside nat makes auto mode choose legacy,
				// which the redirector can only see with GID 0.
				if mode == "legacy" {
					hostIn(t, ns, "iptables-legacy", "-t", "filter", "-A", "INPUT", "-p", "tcp", "--dport", "9", "-j", "ACCEPT")
				}
				out := runc(t, ns, rootfs, cf.Config, RedirectorPath, "apply", "--ipv6=on")
				for _, want := range []string{`uid=65532 gid=0 "capabilities for iptables"="[NET_ADMIN NET_RAW]"`, "backend=" + mode, "apply done"} {
					if !strings.Contains(out, want) {
						t.Errorf("log lacks %q:\n%s", want, out)
					}
				}
				for _, fam := range []string{"iptables", "ip6tables"} {
					if saved := hostIn(t, ns, fam+"-"+mode+"-save", "-t", "nat"); !strings.Contains(saved, "-j REDIRECT --to-ports 15001") {
						t.Errorf("after apply, %s-%s-save shows no redirect to 15001:\n%s", fam, mode, saved)
					}
				}
				runc(t, ns, rootfs, cf.Config, RedirectorPath, "cleanup")
				if saved := hostIn(t, ns, "iptables-"+mode+"-save", "-t", "nat"); strings.Contains(saved, "MESHINIT") {
					t.Errorf("after cleanup:\n%s", saved)
				}
			})
		}
	})

	t.Run("redirector applies and cleans up", func(t *testing.T) {
		if got := strings.TrimSpace(inNetns(t, rootfs).ok(t, RedirectorPath, "version")); got != testVersion {
			t.Errorf("redirector version = %q, want %q", got, testVersion)
		}
		for _, mode := range []string{"nft", "legacy"} {
			t.Run(mode, func(t *testing.T) {
				run := inNetns(t, rootfs)
				save := "/usr/sbin/iptables-" + mode + "-save"
				run.ok(t, RedirectorPath, "apply", "--iptables-mode", mode, "--ipv6", "off")
				if saved := run.ok(t, save, "-t", "nat"); !strings.Contains(saved, "-j REDIRECT --to-ports 15001") {
					t.Errorf("after apply, %s shows no redirect to 15001:\n%s", save, saved)
				}
				run.ok(t, RedirectorPath, "cleanup")
				if saved := run.ok(t, save, "-t", "nat"); strings.Contains(saved, "REDIRECT") {
					t.Errorf("after cleanup, %s still redirects:\n%s", save, saved)
				}
			})
		}
	})
}

// checkContents checks an unpacked image of platform p holds what the
// redirector runs, for p's machine, and none of what it does not need.
func checkContents(t *testing.T, rootfs string, p oci.Platform) {
	t.Helper()
	sbin := []string{"xtables-nft-multi", "xtables-legacy-multi"}
	for _, mode := range []string{"nft", "legacy"} {
		for _, fam := range []string{"iptables", "ip6tables"} {
			for _, suffix := range []string{"", "-save", "-restore"} {
				sbin = append(sbin, fam+"-"+mode+suffix)
			}
		}
	}
	want := []string{RedirectorPath, "/tmp", "/run", "/etc/protocols",
		"/usr/lib/" + p.Triplet + "/xtables/libxt_REDIRECT.so",
		"/usr/lib/" + p.Triplet + "/xtables/libxt_owner.so",
		"/usr/lib/" + p.Triplet + "/xtables/libxt_comment.so",
		"/usr/lib/" + p.Triplet + "/xtables/libxt_tcp.so",
		"/lib/" + p.Triplet + "/libc.so.6"}
	for _, s := range sbin {
		want = append(want, "/usr/sbin/"+s)
	}
	for _, w := range want {
		if _, err := os.Stat(filepath.Join(rootfs, w)); err != nil {
			t.Errorf("missing %s: %v", w, err)
		}
	}
	for _, absent := range []string{"/usr/share/doc", "/usr/share/man", "/usr/sbin/iptables-apply", "/bin/sh", "/usr/sbin/iptables"} {
		if _, err := os.Lstat(filepath.Join(rootfs, absent)); err == nil {
			t.Errorf("%s is in the image, want it left out", absent)
		}
	}
	if fi, err := os.Stat(filepath.Join(rootfs, "tmp")); err != nil {
		t.Error(err)
	} else if fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("/tmp mode %v, want 1777", fi.Mode())
	}
	// Every ELF file is for p: no host library slipped in.
	err := filepath.WalkDir(rootfs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := elf.Open(path)
		if err != nil {
			return nil // not ELF
		}
		defer f.Close()
		if f.Machine != p.Machine {
			t.Errorf("%s is for %v, want %v", strings.TrimPrefix(path, rootfs), f.Machine, p.Machine)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedirectorImageOtherArchitectures builds the image for every other supported
// architecture and checks its contents; the programs cannot run here
// (emulators lack the netfilter netlink protocol), but a library or module
// of the wrong architecture, or a missing one, fails the build or the check.
func TestRedirectorImageOtherArchitectures(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root (apt-get into the package cache); CI runs as root")
	}
	host, err := oci.HostPlatform()
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range oci.SupportedArchs() {
		if arch == host.GOARCH {
			continue
		}
		t.Run(arch, func(t *testing.T) {
			p, _ := oci.LookupPlatform(arch)
			dir := t.TempDir()
			bin := buildRedirector(t, p, filepath.Join(dir, "redirector"))
			archive := filepath.Join(dir, "redirector.oci.tar")
			buildArchive(t, context.Background(), RedirectorOptions{Platform: p, Redirector: bin, Version: testVersion}, archive)
			img, rootfs := unpackArchive(t, archive, Ref("redirector", testVersion), filepath.Join(dir, "unpacked"))
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Architecture != p.GOARCH {
				t.Errorf("config architecture %q, want %q", cf.Architecture, p.GOARCH)
			}
			checkContents(t, rootfs, p)
		})
	}
}

// buildArchive builds the image and writes it as an OCI archive to file.
func buildArchive(t *testing.T, ctx context.Context, opts RedirectorOptions, file string) v1.Hash {
	t.Helper()
	img, err := BuildRedirector(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := oci.WriteArchive(f, Ref("redirector", testVersion), img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

// unpackArchive reads the archive's one image, checks it is named ref and
// unpacks its root file system into dir/rootfs.
func unpackArchive(t *testing.T, file, ref, dir string) (v1.Image, string) {
	t.Helper()
	idx, err := oci.ReadArchive(file, filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[oci.AnnotationRefName] != ref {
		t.Fatalf("index.json %+v, want one image named %s", im.Manifests, ref)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	if err := oci.Unpack(img, rootfs); err != nil {
		t.Fatal(err)
	}
	return img, rootfs
}

// restoreScript exercises the extension modules a redirector uses (tcp,
// owner, comment, multiport, REDIRECT, RETURN) and a chain of its own.
func restoreScript(fam string) string {
	cidr := "192.0.2.0/24" // TEST-NET-1: only written into a rule, never reached
	if fam == "ip6tables" {
		cidr = "2001:db8::/32"
	}
	return `*nat
:MESHINIT_IMAGE_TEST - [0:0]
-A OUTPUT -p tcp -j MESHINIT_IMAGE_TEST
-A MESHINIT_IMAGE_TEST -m owner --uid-owner 1337 -m comment --comment "image test: proxy" -j RETURN
-A MESHINIT_IMAGE_TEST -m owner --gid-owner 1337 -j RETURN
-A MESHINIT_IMAGE_TEST -o lo -j RETURN
-A MESHINIT_IMAGE_TEST -d ` + cidr + ` -j RETURN
-A MESHINIT_IMAGE_TEST -p tcp -m tcp --dport 15020:15021 -j RETURN
-A MESHINIT_IMAGE_TEST -p tcp -m multiport --dports 80,443 -j REDIRECT --to-ports 15001
COMMIT
`
}

// netnsRunner runs programs of an unpacked image with chroot inside one
// network namespace, with /proc and /dev/null mounted as a runtime would.
type netnsRunner struct{ name, rootfs string }

var netnsCount atomic.Int64

// inNetns creates a fresh network namespace, deleted when the test ends.
func inNetns(t *testing.T, rootfs string) netnsRunner {
	t.Helper()
	name := fmt.Sprintf("meshinit-image-%d-%d", os.Getpid(), netnsCount.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return netnsRunner{name: name, rootfs: rootfs}
}

func (r netnsRunner) ok(t *testing.T, args ...string) string {
	t.Helper()
	return r.okIn(t, "", args...)
}

// okIn runs args (a program in the image and its arguments) with stdin.
func (r netnsRunner) okIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	// A private mount namespace (unshare --mount) keeps these mounts away
	// from the host; they vanish with the process.
	script := `mount --bind /dev/null "$0/dev/null" && exec chroot "$0" "$@"`
	full := append([]string{"netns", "exec", r.name, "unshare", "--mount", "--pid", "--fork",
		"--mount-proc=" + filepath.Join(r.rootfs, "proc"), "sh", "-c", script, r.rootfs}, args...)
	cmd := exec.Command("ip", full...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in the image: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// hostIn runs a host program in r's network namespace.
func hostIn(t *testing.T, r netnsRunner, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", r.name}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runc runs args in the unpacked image with runc, in r's network namespace,
// as the kubelet and containerd run the init container the webhook builds:
// the image's user and environment, only NET_ADMIN and NET_RAW (bounding,
// permitted, effective), no_new_privs, a read-only root file system.
// It fails t unless the program exits 0, and returns its output.
func runc(t *testing.T, r netnsRunner, rootfs string, cfg v1.Config, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("runc"); err != nil {
		t.Fatalf("runc is needed to run the image as a container: %v (hack/install-debian-packages.sh --cluster installs it)", err)
	}
	var uid, gid int
	if _, err := fmt.Sscanf(cfg.User, "%d:%d", &uid, &gid); err != nil {
		t.Fatalf("image user %q: %v", cfg.User, err)
	}
	caps := []string{"CAP_NET_ADMIN", "CAP_NET_RAW"}
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"user": map[string]any{"uid": uid, "gid": gid},
			"args": args, "env": cfg.Env, "cwd": "/",
			"capabilities":    map[string]any{"bounding": caps, "permitted": caps, "effective": caps},
			"noNewPrivileges": true,
		},
		"root": map[string]any{"path": rootfs, "readonly": true},
		"mounts": []map[string]any{
			{"destination": "/proc", "type": "proc", "source": "proc"},
			{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		"linux": map[string]any{
			"namespaces": []map[string]any{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"},
				{"type": "network", "path": "/run/netns/" + r.name}},
			"maskedPaths":   []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	bundle := t.TempDir()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o644))
	id := fmt.Sprintf("meshinit-image-test-%d-%d", os.Getpid(), netnsCount.Add(1))
	cmd := exec.Command("runc", "--root", filepath.Join(bundle, "state"), "run", "--bundle", bundle, id)
	out, err := cmd.CombinedOutput()
	if err != nil {
		exec.Command("runc", "--root", filepath.Join(bundle, "state"), "delete", "--force", id).Run()
		t.Fatalf("runc run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildRedirector builds the real redirector as Build does: statically,
// with its Version set by -ldflags -X.
func buildRedirector(t *testing.T, p oci.Platform, out string) string {
	t.Helper()
	if err := redirectorBin.build(context.Background(), "", p, testVersion, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func fileSum(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
