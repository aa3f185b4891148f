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

package release

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshinit/meshinit/internal/images"
)

// PushImages builds every image for archs (internal/images.Build, archives
// in dir) and pushes each multi-platform index to
// <prefix>/<image>:<version>; it returns each image's repository and the
// digest of its index, which PinChart pins.
func PushImages(ctx context.Context, prefix, version, dir string, archs []string, o images.Options) (map[string]Image, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	o.Archs, o.Version, o.Out, o.Push = archs, version, dir, prefix
	archives, err := images.Build(ctx, o)
	if err != nil {
		return nil, err
	}
	out := map[string]Image{}
	for _, a := range archives {
		if a.Arch == "" { // the index, what was pushed
			out[a.Image] = Image{Repository: prefix + "/" + a.Image, Digest: a.Digest}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("release: no image built")
	}
	return out, nil
}
