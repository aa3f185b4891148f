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
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/meshinit/meshinit/internal/images/oci"
)

// Options say which images Build builds, and where to.
type Options struct {
	// Archs are the Go architectures to build for (see
	// oci.SupportedArchs); empty means the host's, runtime.GOARCH.
	Archs []string
	// Version is the images' tag and version label; empty means
	// DefaultVersion. It is made a valid tag (see tagSafe).
	Version string
	// Out is the directory the archives are written to; it is created.
	Out string
	// Only are the images to build (see Names); empty means all.
	Only []string
	// Push, if set, is a registry prefix each index is pushed to as
	// <Push>/<image>:<version>, e.g. registry.example.com/meshinit.
	Push string
	// RefreshDebian fetches Debian's package lists again first (new
	// security updates); otherwise the cached lists are reused.
	RefreshDebian bool
	// Log receives one line per archive written ("<file>\t<ref>\t<digest>\t<n> bytes")
	// and per index pushed ("pushed\t<ref>@<digest>"); nil discards them.
	Log io.Writer
	// AptLog receives apt's output; nil discards it (errors quote it).
	AptLog io.Writer
}

// Archive is one archive Build wrote.
type Archive struct {
	// Image is the image's name, e.g. "webhook".
	Image string
	// Arch is the GOARCH of a single-platform archive; "" for the
	// multi-platform index archive.
	Arch string
	// File is the archive's path: <Out>/<image>-<arch>.oci.tar or
	// <Out>/<image>.oci.tar.
	File string
	// Ref is the reference the archive names the image by, e.g.
	// ghcr.io/meshinit/webhook:0.1.0.
	Ref string
	// Digest is the image's (or the index's) digest, "sha256:...".
	Digest string
}

// Build builds the images o asks for and writes, for each, one archive per
// architecture and then the multi-platform index archive, in the order of
// Names. Each archive is written atomically. The Go binaries are built
// concurrently first, once per architecture even if two images hold them.
func Build(ctx context.Context, o Options) ([]Archive, error) {
	if o.Out == "" {
		return nil, errors.New("images: no output directory (Options.Out)")
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	archs := o.Archs
	if len(archs) == 0 {
		archs = []string{runtime.GOARCH}
	}
	version := o.Version
	if version == "" {
		v, err := DefaultVersion()
		if err != nil {
			return nil, err
		}
		version = v
	}
	version = tagSafe(version)
	created, err := oci.SourceDateEpoch()
	if err != nil {
		return nil, err
	}
	names := Names()
	if len(o.Only) > 0 {
		for _, n := range o.Only {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("unknown image %q (known: %s)", n, strings.Join(names, ", "))
			}
		}
		names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(o.Only, n) })
	}
	var platforms []oci.Platform
	for _, a := range archs {
		p, err := oci.LookupPlatform(a)
		if err != nil {
			return nil, err
		}
		platforms = append(platforms, p)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "meshinit-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bins, err := buildBinaries(ctx, names, platforms, version, tmp)
	if err != nil {
		return nil, err
	}

	var archives []Archive
	refresh := o.RefreshDebian
	for _, name := range names {
		ref := Ref(name, version)
		var adds []mutate.IndexAddendum
		for _, p := range platforms {
			bin := bins[binaryKey{binaryOf(name), p.GOARCH}]
			var img v1.Image
			if name == "redirector" {
				bo := RedirectorOptions{Platform: p, Redirector: bin, Version: version, Created: created}
				bo.Debian.Refresh = refresh
				refresh = false // once is enough
				bo.Debian.Log = o.AptLog
				if img, err = BuildRedirector(ctx, bo); err != nil {
					return archives, fmt.Errorf("%s %s: %w", name, p, err)
				}
			} else {
				if img, err = goImageNamed(name).image(p, bin, version, created); err != nil {
					return archives, fmt.Errorf("%s %s: %w", name, p, err)
				}
			}
			a, err := write(filepath.Join(o.Out, name+"-"+p.GOARCH+".oci.tar"), ref, img, log)
			if err != nil {
				return archives, err
			}
			a.Image, a.Arch = name, p.GOARCH
			archives = append(archives, a)
			op := p.OCI()
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &op}})
		}
		idx := newIndex(adds...)
		a, err := write(filepath.Join(o.Out, name+".oci.tar"), ref, idx, log)
		if err != nil {
			return archives, err
		}
		a.Image = name
		archives = append(archives, a)
		if o.Push != "" {
			if err := push(ctx, strings.TrimSuffix(o.Push, "/")+"/"+name+":"+version, idx, log); err != nil {
				return archives, err
			}
		}
	}
	return archives, nil
}

// binaryKey is one binary for one architecture.
type binaryKey struct {
	bin  binary
	arch string
}

// buildBinaries builds, concurrently, every binary the images need for every
// platform into dir, and returns their files. The first failure cancels
// the other builds and is returned.
func buildBinaries(ctx context.Context, names []string, platforms []oci.Platform, version, dir string) (map[binaryKey]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files := map[binaryKey]string{}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, name := range names {
		for _, p := range platforms {
			k := binaryKey{binaryOf(name), p.GOARCH}
			if _, ok := files[k]; ok {
				continue
			}
			f := filepath.Join(dir, fmt.Sprintf("%s-%s", filepath.Base(k.bin.pkg), p.GOARCH))
			files[k] = f
			wg.Go(func() {
				if err := k.bin.build(ctx, "", p, version, f); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return files, nil
}

// binaryOf is the binary image name holds.
func binaryOf(name string) binary {
	if name == "redirector" {
		return redirectorBin
	}
	return goImageNamed(name).binary()
}

// newIndex is the OCI image index of the given platform images.
func newIndex(adds ...mutate.IndexAddendum) v1.ImageIndex {
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
}

func goImageNamed(name string) GoImage {
	for _, g := range goImages {
		if g.name == name {
			return g.img
		}
	}
	panic("no Go image " + name)
}

// write writes the archive atomically and logs its path, reference, digest
// and size.
func write(file, ref string, a oci.Artifact, log io.Writer) (Archive, error) {
	f, err := os.CreateTemp(filepath.Dir(file), ".tmp-*.tar")
	if err != nil {
		return Archive{}, err
	}
	defer os.Remove(f.Name())
	if err := oci.WriteArchive(f, ref, a); err != nil {
		f.Close()
		return Archive{}, err
	}
	if err := f.Close(); err != nil {
		return Archive{}, err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		return Archive{}, err
	}
	d, err := a.Digest()
	if err != nil {
		return Archive{}, err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return Archive{}, err
	}
	fmt.Fprintf(log, "%s\t%s\t%s\t%d bytes\n", file, ref, d, fi.Size())
	return Archive{File: file, Ref: ref, Digest: d.String()}, nil
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
