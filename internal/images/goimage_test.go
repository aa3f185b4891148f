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
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/meshinit/meshinit/internal/images/oci"
)

// TestBuildGoImage builds a test's own image as e2e/cluster builds its
// sandbox image, and checks the archive's name, the config and the files.
func TestBuildGoImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "pause.oci.tar")
	g := GoImage{Package: module + "/e2e/cmd/pause"}
	if err := BuildGoImage(ctx, g, file, GoImageOptions{Ref: "localhost/test/pause:v1"}); err != nil {
		t.Fatal(err)
	}
	img, rootfs := unpackArchive(t, file, "localhost/test/pause:v1", dir)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/usr/local/bin/pause"}) || cf.Config.User != "" ||
		cf.Config.Labels[oci.LabelVersion] != "dev" || cf.Config.Labels[oci.LabelTitle] != "" {
		t.Errorf("config %+v", cf.Config)
	}
	for _, w := range []string{"usr/local/bin/pause", "etc/passwd", "etc/group", "tmp"} {
		if _, err := os.Stat(filepath.Join(rootfs, w)); err != nil {
			t.Errorf("image lacks %s: %v", w, err)
		}
	}

	if err := BuildGoImage(ctx, g, file, GoImageOptions{}); err == nil {
		t.Error("BuildGoImage without a Ref: no error")
	}
}
