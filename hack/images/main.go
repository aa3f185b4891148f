// Command images builds meshinit's container images as OCI archives without
// a container daemon (`make images`):
//
//   - redirector: the init container (recipe in initimage/image),
//   - webhook: the admission webhook, a static binary run as 65532,
//   - test-app and test-proxy: the test server (internal/testproxy) as the
//     app (65532) and as the proxy (UID 1337), for tests and `helm test`.
//
// For each image and architecture it writes
// _output/images/<image>-<arch>.oci.tar, and <image>.oci.tar, one
// multi-platform index of all architectures. Load one with
// `ctr -n k8s.io images import <file>`. With -push <prefix> it also pushes
// each index to <prefix>/<image>:<version> (go-containerregistry's remote,
// credentials from the Docker config).
//
// The version defaults to the chart's appVersion, so the chart's default
// image references name these images. Output is reproducible: the same
// sources, version and Debian packages give the same digests.
// SOURCE_DATE_EPOCH, if set, stamps the images.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
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

type options struct {
	archs         []string
	version, out  string
	push          string
	only          []string
	refresh, verb bool
}

func main() {
	archs := flag.String("arch", runtime.GOARCH, "comma-separated architectures: "+strings.Join(ociimage.SupportedArchs(), ", "))
	version := flag.String("version", "", "image version and tag (default: the chart's appVersion)")
	out := flag.String("out", "_output/images", "directory the archives are written to")
	push := flag.String("push", "", "registry prefix to push every index to as <prefix>/<image>:<version>, e.g. registry.example.com/meshinit")
	only := flag.String("images", strings.Join(imageNames(), ","), "comma-separated images to build")
	refresh := flag.Bool("refresh", false, "fetch Debian's package lists again first (new security updates); otherwise the cached lists are reused")
	verbose := flag.Bool("v", false, "show apt's output")
	flag.Parse()
	opts := options{archs: split(*archs), version: *version, out: *out, push: *push, only: split(*only), refresh: *refresh, verb: *verbose}
	if err := run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(ctx context.Context, o options) error {
	if o.version == "" {
		v, err := defaultVersion()
		if err != nil {
			return err
		}
		o.version = v
	}
	o.version = tagSafe(o.version)
	created, err := ociimage.SourceDateEpoch()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range o.only {
		if !contains(imageNames(), n) {
			return fmt.Errorf("unknown image %q (known: %s)", n, strings.Join(imageNames(), ", "))
		}
		want[n] = true
	}
	var platforms []ociimage.Platform
	for _, a := range o.archs {
		p, err := ociimage.LookupPlatform(a)
		if err != nil {
			return err
		}
		platforms = append(platforms, p)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "meshinit-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// Each binary is built once per platform, even if two images hold it.
	built := map[string]string{}
	binFor := func(b binary, p ociimage.Platform) (string, error) {
		key := b.pkg + " " + p.GOARCH
		if f, ok := built[key]; ok {
			return f, nil
		}
		f := filepath.Join(tmp, fmt.Sprintf("%s-%s", filepath.Base(b.pkg), p.GOARCH))
		if err := b.build(ctx, p, o.version, f); err != nil {
			return "", err
		}
		built[key] = f
		return f, nil
	}

	for _, name := range imageNames() {
		if !want[name] {
			continue
		}
		ref := Ref(name, o.version)
		var adds []mutate.IndexAddendum
		for _, p := range platforms {
			var img v1.Image
			if name == "redirector" {
				bin, err := binFor(redirectorBin, p)
				if err != nil {
					return err
				}
				bo := image.Options{Platform: p, Redirector: bin, Version: o.version, Created: created}
				bo.Debian.Refresh = o.refresh
				o.refresh = false // once is enough
				if o.verb {
					bo.Debian.Log = os.Stderr
				}
				if img, err = image.Build(ctx, bo); err != nil {
					return fmt.Errorf("%s %s: %w", name, p, err)
				}
			} else {
				spec := specNamed(name)
				bin, err := binFor(spec.bin, p)
				if err != nil {
					return err
				}
				if img, err = buildStatic(spec, p, bin, o.version, created); err != nil {
					return fmt.Errorf("%s %s: %w", name, p, err)
				}
			}
			if err := write(filepath.Join(o.out, name+"-"+p.GOARCH+".oci.tar"), ref, img); err != nil {
				return err
			}
			op := p.OCI()
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &op}})
		}
		idx := newIndex(adds...)
		if err := write(filepath.Join(o.out, name+".oci.tar"), ref, idx); err != nil {
			return err
		}
		if o.push != "" {
			if err := push(ctx, strings.TrimSuffix(o.push, "/")+"/"+name+":"+o.version, idx); err != nil {
				return err
			}
		}
	}
	return nil
}

// newIndex is the OCI image index of the given platform images.
func newIndex(adds ...mutate.IndexAddendum) v1.ImageIndex {
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
}

func specNamed(name string) staticSpec {
	for _, s := range staticImages {
		if s.name == name {
			return s
		}
	}
	panic("no static image " + name)
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
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
