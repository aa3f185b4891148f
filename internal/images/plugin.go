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
)

// pluginBin is kubectl-meshinit, `kubectl meshinit`: shipped as a binary
// for operators' machines, not in an image, and built as the images'
// programs are.
var pluginBin = binary{pkg: module + "/kubectlplugin/cmd/kubectl-meshinit", versionVar: module + "/kubectlplugin.Version"}

// BuildPlugin builds kubectl-meshinit for goos and goarch into file as
// Build builds the images' programs (statically, -trimpath, stripped),
// with its version set by -ldflags -X: version, or DefaultVersion when
// empty. goTool is the go command ("" for $GO, else "go").
func BuildPlugin(ctx context.Context, goTool, goos, goarch, version, file string) error {
	if version == "" {
		v, err := DefaultVersion()
		if err != nil {
			return err
		}
		version = v
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return pluginBin.buildFor(ctx, goTool, goos, goarch, version, file)
}
