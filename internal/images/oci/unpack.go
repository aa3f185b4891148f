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
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"
)

// Unpack writes img's root file system (its layers flattened) into dir, as
// a container runtime would: modes including setuid and sticky bits,
// symbolic and hard links, regular files' extended attributes; owners too
// when running as root (which setting security.* attributes also needs). dir must be
// empty or absent. Entries escaping dir are refused.
func Unpack(img v1.Image, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode // applied last, so read-only directories can be filled
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		name := path.Clean(h.Name)
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("unpack: unsafe entry %q", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		mode := h.FileInfo().Mode()
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
			dirs = append(dirs, dirMode{target, mode & modeBits})
		case tar.TypeReg:
			err = writeFileFrom(target, tr, 0o600)
			if err == nil && os.Geteuid() == 0 {
				err = os.Lchown(target, h.Uid, h.Gid) // before chmod: chown clears setuid
			}
			if err == nil {
				err = os.Chmod(target, mode&modeBits)
			}
			if err == nil {
				err = setXattrs(target, h.PAXRecords) // last: chown clears file capabilities
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, target)
		case tar.TypeLink:
			link := path.Clean(h.Linkname)
			if !filepath.IsLocal(link) {
				return fmt.Errorf("unpack: unsafe hard link %q -> %q", h.Name, h.Linkname)
			}
			err = os.Link(filepath.Join(dir, filepath.FromSlash(link)), target)
		default:
			err = fmt.Errorf("unsupported entry type %q", h.Typeflag)
		}
		if err == nil && os.Geteuid() == 0 && (h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeSymlink) {
			err = os.Lchown(target, h.Uid, h.Gid)
		}
		if err != nil {
			return fmt.Errorf("unpack: %s: %w", h.Name, err)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
	}
	return nil
}

// setXattrs sets the extended attributes a tar header's PAX records carry.
func setXattrs(path string, pax map[string]string) error {
	for k, v := range pax {
		if name, ok := strings.CutPrefix(k, paxXattr); ok {
			if err := unix.Lsetxattr(path, name, []byte(v), 0); err != nil {
				return fmt.Errorf("extended attribute %s: %w", name, err)
			}
		}
	}
	return nil
}
