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
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFileCapabilities compares with what setcap(8) (libcap 2.66) writes
// for "cap_net_admin,cap_net_raw+p" and "+ep".
func TestFileCapabilities(t *testing.T) {
	for _, tc := range []struct {
		effective bool
		want      string
	}{
		{false, "0000000200300000000000000000000000000000"},
		{true, "0100000200300000000000000000000000000000"},
	} {
		if got := hex.EncodeToString([]byte(FileCapabilities(tc.effective, unix.CAP_NET_ADMIN, unix.CAP_NET_RAW))); got != tc.want {
			t.Errorf("FileCapabilities(%v, NET_ADMIN, NET_RAW) = %s, want %s", tc.effective, got, tc.want)
		}
	}
	if got := hex.EncodeToString([]byte(FileCapabilities(false, unix.CAP_BPF))); got != "0000000200000000000000008000000000000000" {
		t.Errorf("CAP_BPF (39) is not in the second word: %s", got)
	}
}

// TestLayerCarriesXattrs builds a layer with extended attributes, checks
// the PAX records, and unpacks it: the attributes are set on the file.
func TestLayerCarriesXattrs(t *testing.T) {
	files := []File{{Path: "/bin/prog", Mode: 0o755, Data: []byte("x"), Xattrs: map[string]string{"user.meshinit": "a\x00b", "user.other": "c"}}}
	l, err := NewLayer(files, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range tarEntries(t, l) {
		if h.Name == "bin/prog" && (h.PAXRecords["SCHILY.xattr.user.meshinit"] != "a\x00b" || h.PAXRecords["SCHILY.xattr.user.other"] != "c") {
			t.Errorf("bin/prog PAX records %q", h.PAXRecords)
		}
	}
	again, err := NewLayer(files, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, l) != digest(t, again) {
		t.Error("the same files with extended attributes gave two digests")
	}
	img, err := NewImage(Config{Platform: Platform{GOARCH: "amd64"}}, l)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	if err := Unpack(img, root); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := unix.Lgetxattr(filepath.Join(root, "bin/prog"), "user.meshinit", buf)
	if err != nil || string(buf[:n]) != "a\x00b" {
		t.Errorf("unpacked bin/prog has user.meshinit %q, %v", buf[:n], err)
	}

	if _, err := NewLayer([]File{{Path: "/d", Mode: os.ModeDir | 0o755, Xattrs: map[string]string{"user.x": "1"}}}, LayerOptions{}); err == nil {
		t.Error("extended attributes on a directory accepted")
	}
}
