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
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer: a regular file, a directory or a symbolic
// link. Build them with RegularFile, CopyFile, Dir, Symlink or FilesFromDir.
type File struct {
	// Path is the absolute path in the image, e.g. "/usr/sbin/iptables-nft".
	Path string
	// Mode holds the type (fs.ModeDir, fs.ModeSymlink, or none for a
	// regular file) and the permissions, setuid, setgid and sticky bits.
	Mode fs.FileMode
	// Source is the host file whose content a regular file gets when Data
	// is nil. It is read when the layer is built.
	Source string
	// Data is a regular file's content.
	Data []byte
	// Link is a symbolic link's target, kept as is (relative or absolute).
	Link string
	// Xattrs are a regular file's extended attributes, name to value (for
	// example XattrCapability), carried as PAX records
	// "SCHILY.xattr.<name>", which container runtimes apply on unpacking.
	Xattrs map[string]string
}

// paxXattr prefixes an extended attribute's name in a PAX record.
const paxXattr = "SCHILY.xattr."

// RegularFile is a file with the given content.
func RegularFile(p string, perm fs.FileMode, data []byte) File {
	return File{Path: p, Mode: perm, Data: data}
}

// CopyFile is a file whose content is read from the host file source.
func CopyFile(p, source string, perm fs.FileMode) File {
	return File{Path: p, Mode: perm, Source: source}
}

// Dir is a directory.
func Dir(p string, perm fs.FileMode) File { return File{Path: p, Mode: fs.ModeDir | perm} }

// Symlink is a symbolic link to target.
func Symlink(p, target string) File { return File{Path: p, Mode: fs.ModeSymlink | 0o777, Link: target} }

// FilesFromDir returns the entries at the absolute image paths inside root
// (an unpacked image root), as they are there: links are not followed, and
// a directory brings everything below it.
func FilesFromDir(root string, paths ...string) ([]File, error) {
	var files []File
	for _, p := range paths {
		p = path.Clean("/" + p)
		err := filepath.WalkDir(filepath.Join(root, p), func(host string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, host)
			if err != nil {
				return err
			}
			f, err := fileFromHost(host, "/"+filepath.ToSlash(rel))
			if err != nil {
				return err
			}
			files = append(files, f)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("layer: files from %s: %w", root, err)
		}
	}
	return files, nil
}

func fileFromHost(host, p string) (File, error) {
	fi, err := os.Lstat(host)
	if err != nil {
		return File{}, err
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return Dir(p, m&modeBits), nil
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(host)
		return Symlink(p, target), err
	case m.IsRegular():
		return CopyFile(p, host, m&modeBits), nil
	default:
		return File{}, fmt.Errorf("%s: unsupported file type %v", host, m.Type())
	}
}

const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// LayerOptions tune NewLayer. The zero value is the default.
type LayerOptions struct {
	// ModTime stamps every entry. Default: the Unix epoch (see
	// SourceDateEpoch for honouring SOURCE_DATE_EPOCH).
	ModTime time.Time
}

// NewLayer builds a gzip-compressed OCI layer holding files, reproducibly:
// entries sorted by path, every missing parent directory added (0755), one
// modification time, owner and group 0 with no names. A path given twice
// must be given the same way both times.
func NewLayer(files []File, opts LayerOptions) (v1.Layer, error) {
	if opts.ModTime.IsZero() {
		opts.ModTime = time.Unix(0, 0)
	}
	entries, err := normalize(files)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if err := writeTar(zw, entries, opts.ModTime); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	blob := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(blob)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// normalize cleans paths, drops exact duplicates, adds parent directories
// and sorts, refusing conflicting entries and entries below a non-directory.
func normalize(files []File) ([]File, error) {
	byPath := map[string]File{}
	for _, f := range files {
		f.Path = path.Clean("/" + f.Path)
		if f.Path == "/" {
			continue
		}
		if len(f.Xattrs) > 0 && !f.Mode.IsRegular() {
			return nil, fmt.Errorf("layer: %s: extended attributes on a %v, only regular files may have them", f.Path, f.Mode.Type())
		}
		if f.Mode&^(modeBits|fs.ModeType) != 0 {
			return nil, fmt.Errorf("layer: %s: unsupported mode %v (octal %o; special bits are fs.ModeSetuid, fs.ModeSetgid, fs.ModeSticky)", f.Path, f.Mode, uint32(f.Mode))
		}
		if prev, ok := byPath[f.Path]; ok {
			if !sameEntry(prev, f) {
				return nil, fmt.Errorf("layer: %s given twice, differently (%v and %v)", f.Path, prev.Mode, f.Mode)
			}
			continue
		}
		byPath[f.Path] = f
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			parent, ok := byPath[dir]
			if !ok {
				byPath[dir] = Dir(dir, 0o755)
				continue
			}
			if !parent.Mode.IsDir() {
				return nil, fmt.Errorf("layer: %s is below %s, which is not a directory (%v)", p, dir, parent.Mode)
			}
		}
	}
	out := make([]File, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func sameEntry(a, b File) bool {
	return a.Mode == b.Mode && a.Link == b.Link && a.Source == b.Source && bytes.Equal(a.Data, b.Data) && maps.Equal(a.Xattrs, b.Xattrs)
}

func writeTar(w io.Writer, entries []File, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range entries {
		h := &tar.Header{
			Name:    f.Path[1:],
			Mode:    tarMode(f.Mode),
			ModTime: mtime,
		}
		var data []byte
		switch {
		case f.Mode.IsDir():
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		case f.Mode&fs.ModeSymlink != 0:
			h.Typeflag = tar.TypeSymlink
			h.Linkname = f.Link
		case f.Mode.IsRegular():
			h.Typeflag = tar.TypeReg
			data = f.Data
			if data == nil && f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					return fmt.Errorf("layer: %s: %w", f.Path, err)
				}
			}
			h.Size = int64(len(data))
			for name, value := range f.Xattrs {
				if h.PAXRecords == nil {
					h.PAXRecords = map[string]string{}
				}
				h.PAXRecords[paxXattr+name] = value
			}
		default:
			return fmt.Errorf("layer: %s: unsupported file type %v", f.Path, f.Mode.Type())
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("layer: %s: %w", f.Path, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("layer: %s: %w", f.Path, err)
		}
	}
	return tw.Close()
}

// tarMode converts permissions and special bits to tar's octal mode.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// SourceDateEpoch is the time in $SOURCE_DATE_EPOCH (seconds since the Unix
// epoch, see reproducible-builds.org), else the Unix epoch itself.
func SourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: not a number of seconds", v)
	}
	return time.Unix(s, 0).UTC(), nil
}
