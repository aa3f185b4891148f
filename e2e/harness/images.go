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

package harness

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/meshinit/meshinit/internal/images"
)

// Images are the references of the images LoadImages loaded: `make
// images`' references at the chart's appVersion, which are the chart's
// default images, so the chart needs no image values.
type Images struct {
	Redirector, Webhook, TestApp, TestProxy string
}

// LoadImages builds meshinit's images for the host's architecture into dir
// with internal/images (what `make images` runs) and imports them into the
// node's containerd, or pushes them to Registry and points the chart's
// image values there.
func (c *Cluster) LoadImages(ctx context.Context, dir string, logf func(string, ...any)) (Images, error) {
	began := time.Now()
	archives, err := images.Build(ctx, images.Options{Archs: []string{runtime.GOARCH}, Out: dir, Push: c.Registry})
	if err != nil {
		return Images{}, fmt.Errorf("building the images: %w", err)
	}
	refs := map[string]string{}
	for _, a := range archives {
		if a.Arch == "" {
			continue // the index archive; the single-platform one is loaded
		}
		ref := a.Ref
		if c.Registry != "" {
			ref = strings.TrimSuffix(c.Registry, "/") + "/" + a.Image + ref[strings.LastIndex(ref, ":"):]
		} else if err := c.LoadImage(ctx, a.File); err != nil {
			return Images{}, err
		}
		refs[a.Image] = ref
		logf("image %s (%s) ready", ref, a.Digest)
	}
	imgs := Images{Redirector: refs["redirector"], Webhook: refs["webhook"], TestApp: refs["test-app"], TestProxy: refs["test-proxy"]}
	for name, ref := range map[string]string{"redirector": imgs.Redirector, "webhook": imgs.Webhook, "test-app": imgs.TestApp, "test-proxy": imgs.TestProxy} {
		if ref == "" {
			return Images{}, fmt.Errorf("building the images: no %s archive for %s", name, runtime.GOARCH)
		}
	}
	// The proxy containers of AppPod and DNSAppPod, trusted for their
	// arguments.
	proxy := func(name string, args ...any) map[string]any {
		// []any, as values read from YAML are: Helm's schema validation
		// refuses a []string where items are oneOf string or object.
		return map[string]any{"name": name, "image": imgs.TestProxy, "args": args}
	}
	c.policyValues = map[string]any{"policy": map[string]any{
		"proxyContainers": []any{
			proxy("proxy-out", "-listen", ":15001", "-name", "proxy-out"),
			proxy("proxy-in", "-listen", ":15006", "-name", "proxy-in"),
			proxy("proxy-dns", "-listen", ":15098", "-dns", "127.0.0.1:15053", "-name", "proxy-dns"),
		},
		"defaultRedirectPolicy": map[string]any{"interception": "AllowOptOut"},
	}}
	if c.Registry != "" {
		// The tags are the chart's appVersion, its default.
		repo := func(ref string) map[string]any {
			return map[string]any{"repository": ref[:strings.LastIndex(ref, ":")]}
		}
		c.imageValues = map[string]any{
			"webhook": map[string]any{"image": repo(imgs.Webhook)},
			"inject":  map[string]any{"image": repo(imgs.Redirector)},
			"tests":   map[string]any{"image": map[string]any{"app": repo(imgs.TestApp), "proxy": repo(imgs.TestProxy)}},
		}
	}
	logf("images built and made available in %.1fs", time.Since(began).Seconds())
	return imgs, nil
}

// LoadImage imports an OCI archive into the node's containerd, where pods
// find it by the name it was written with.
func (c *Cluster) LoadImage(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.Containerd, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, out)
	}
	return nil
}
