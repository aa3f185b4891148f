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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations on index.json's entry that name the image on import.
const (
	// AnnotationRefName is the OCI layout's reference name.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the name containerd gives an imported
	// image; it takes precedence over AnnotationRefName there.
	AnnotationContainerdName = "io.containerd.image.name"
)

// Artifact is what WriteArchive writes: a v1.Image or a v1.ImageIndex
// (a multi-platform image).
type Artifact interface {
	MediaType() (types.MediaType, error)
	RawManifest() ([]byte, error)
	Digest() (v1.Hash, error)
	Size() (int64, error)
}

// NormalizeRef returns ref ("meshinit/redirector:dev") as container
// runtimes spell it ("docker.io/meshinit/redirector:dev"), the form
// containerd matches a pod's image against. ref must carry a tag, not a
// digest (the digest is known only once the image exists).
func NormalizeRef(ref string) (string, error) {
	tag, err := name.NewTag(ref)
	if err == nil && !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
		err = errors.New("no tag")
	}
	if err != nil {
		return "", fmt.Errorf("archive: reference %q: want [registry/]repository:tag: %w", ref, err)
	}
	reg := tag.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.Context().RepositoryStr() + ":" + tag.TagStr(), nil
}

// WriteArchive writes a (an image or an image index) with every blob it
// references as an OCI image layout in a tar to w. Its index.json has one
// entry, annotated with ref (normalized, see NormalizeRef) so that
// `ctr images import` and other tools name the import. The tar is
// reproducible: sorted entries, fixed times, owner root.
func WriteArchive(w io.Writer, ref string, a Artifact) error {
	full, err := NormalizeRef(ref)
	if err != nil {
		return err
	}
	desc, err := describe(a)
	if err != nil {
		return err
	}
	desc.Annotations = map[string]string{AnnotationRefName: full, AnnotationContainerdName: full}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{*desc},
	})
	if err != nil {
		return err
	}
	blobs := map[v1.Hash]blob{}
	if err := collectBlobs(a, blobs); err != nil {
		return err
	}
	digests := make([]v1.Hash, 0, len(blobs))
	for h := range blobs {
		digests = append(digests, h)
	}
	sort.Slice(digests, func(i, j int) bool { return digests[i].String() < digests[j].String() })

	tw := tar.NewWriter(w)
	put := func(name string, size int64, r io.Reader) error {
		h := &tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if size < 0 {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("archive: %s: %w", name, err)
		}
		if r == nil {
			return nil
		}
		n, err := io.Copy(tw, r)
		if err == nil && n != size {
			err = fmt.Errorf("wrote %d bytes, want %d", n, size)
		}
		if err != nil {
			return fmt.Errorf("archive: %s: %w", name, err)
		}
		return nil
	}
	layoutFile := `{"imageLayoutVersion":"1.0.0"}`
	if err := put("blobs/", -1, nil); err != nil {
		return err
	}
	if err := put("blobs/sha256/", -1, nil); err != nil {
		return err
	}
	for _, h := range digests {
		if h.Algorithm != "sha256" {
			return fmt.Errorf("archive: blob %s: only sha256 digests are supported", h)
		}
		b := blobs[h]
		rc, err := b.open()
		if err != nil {
			return fmt.Errorf("archive: blob %s: %w", h, err)
		}
		err = put("blobs/sha256/"+h.Hex, b.size, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	if err := put("index.json", int64(len(index)), strings.NewReader(string(index))); err != nil {
		return err
	}
	if err := put("oci-layout", int64(len(layoutFile)), strings.NewReader(layoutFile)); err != nil {
		return err
	}
	return tw.Close()
}

type blob struct {
	size int64
	open func() (io.ReadCloser, error)
}

func bytesBlob(b []byte) blob {
	return blob{size: int64(len(b)), open: func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(string(b))), nil
	}}
}

func describe(a Artifact) (*v1.Descriptor, error) {
	mt, err := a.MediaType()
	if err != nil {
		return nil, fmt.Errorf("archive: media type: %w", err)
	}
	d, err := a.Digest()
	if err != nil {
		return nil, fmt.Errorf("archive: digest: %w", err)
	}
	size, err := a.Size()
	if err != nil {
		return nil, fmt.Errorf("archive: size: %w", err)
	}
	desc := &v1.Descriptor{MediaType: mt, Digest: d, Size: size}
	if img, ok := a.(v1.Image); ok {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("archive: config: %w", err)
		}
		desc.Platform = cf.Platform()
	}
	return desc, nil
}

// collectBlobs adds a's manifest and everything it references.
func collectBlobs(a Artifact, blobs map[v1.Hash]blob) error {
	raw, err := a.RawManifest()
	if err != nil {
		return fmt.Errorf("archive: manifest: %w", err)
	}
	d, err := a.Digest()
	if err != nil {
		return fmt.Errorf("archive: digest: %w", err)
	}
	blobs[d] = bytesBlob(raw)
	switch t := a.(type) {
	case v1.ImageIndex:
		im, err := t.IndexManifest()
		if err != nil {
			return fmt.Errorf("archive: index manifest: %w", err)
		}
		for _, m := range im.Manifests {
			var child Artifact
			switch {
			case m.MediaType.IsIndex():
				child, err = t.ImageIndex(m.Digest)
			case m.MediaType.IsImage():
				child, err = t.Image(m.Digest)
			default:
				err = fmt.Errorf("unsupported media type %q", m.MediaType)
			}
			if err != nil {
				return fmt.Errorf("archive: index entry %s: %w", m.Digest, err)
			}
			if err := collectBlobs(child, blobs); err != nil {
				return err
			}
		}
	case v1.Image:
		cfg, err := t.RawConfigFile()
		if err != nil {
			return fmt.Errorf("archive: config: %w", err)
		}
		cd, err := t.ConfigName()
		if err != nil {
			return fmt.Errorf("archive: config digest: %w", err)
		}
		blobs[cd] = bytesBlob(cfg)
		layers, err := t.Layers()
		if err != nil {
			return fmt.Errorf("archive: layers: %w", err)
		}
		for _, l := range layers {
			ld, err := l.Digest()
			if err != nil {
				return fmt.Errorf("archive: layer digest: %w", err)
			}
			size, err := l.Size()
			if err != nil {
				return fmt.Errorf("archive: layer %s size: %w", ld, err)
			}
			blobs[ld] = blob{size: size, open: l.Compressed}
		}
	default:
		return fmt.Errorf("archive: %T is neither an image nor an index", a)
	}
	return nil
}

// ReadArchive unpacks the OCI archive at file into dir (which it creates)
// and returns its index.json as an index; the entries are what WriteArchive
// wrote, e.g. idx.Image(manifests[0].Digest).
func ReadArchive(file, dir string) (v1.ImageIndex, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("archive: read %s: %w", file, err)
		}
		name := path.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return nil, fmt.Errorf("archive: %s: unsafe entry %q", file, h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFileFrom(target, tr, 0o644)
		}
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", h.Name, err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", file, err)
	}
	return idx, nil
}

func writeFileFrom(target string, r io.Reader, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
