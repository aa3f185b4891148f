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

package charts_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/distribution/reference"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// imageEntries are policy.proxyContainers images, pinned in each way an
// entry can be (nothing, a tag, a digest, both), on Docker Hub written
// short and long, and on registries with a port and on localhost.
var imageEntries = []string{
	"registry.example/envoy",
	"registry.example/pinned:v1",
	"registry.example/bydigest@sha256:" + hex64("1"),
	"registry.example/both:v1@sha256:" + hex64("1"),
	"envoyproxy/envoy",
	"nginx",
	"docker.io/library/busybox:1.36",
	"index.docker.io/istio/proxyv2",
	"localhost:5000/proxy",
	"localhost/proxy",
}

// podImages are images a pod's author may write, the runtime's every
// normalisation among them.
var podImages = []string{
	"registry.example/envoy", "registry.example/envoy:v1", "registry.example/envoy@sha256:" + hex64("2"), "registry.example/envoy:v1@sha256:" + hex64("2"),
	"registry.example/envoy-debug", "registry.example/envoy/debug", "registry.example/envoyx:v1", "registry.example:443/envoy", "Registry.example/envoy",
	"registry.example/envoy:", "registry.example/envoy@", "registry.example/envoy:v1:v2", "registry.example/envoy@sha256:short",
	"registry.example/pinned:v1", "registry.example/pinned", "registry.example/pinned:v2", "registry.example/pinned:v1@sha256:" + hex64("2"),
	"registry.example/pinned@sha256:" + hex64("2"), "registry.example/pinned:latest",
	"registry.example/bydigest@sha256:" + hex64("1"), "registry.example/bydigest:v9@sha256:" + hex64("1"), "registry.example/bydigest@sha256:" + hex64("2"),
	"registry.example/bydigest", "registry.example/both:v1@sha256:" + hex64("1"), "registry.example/both:v2@sha256:" + hex64("1"), "registry.example/both:v1",
	"envoyproxy/envoy", "envoyproxy/envoy:v1.30", "docker.io/envoyproxy/envoy:v1.30", "index.docker.io/envoyproxy/envoy", "registry-1.docker.io/envoyproxy/envoy",
	"envoyproxy/envoy-contrib", "library/envoyproxy/envoy", "docker.io/envoyproxy/envoy/x",
	"nginx", "nginx:1.25", "library/nginx", "docker.io/nginx", "docker.io/library/nginx:1.25", "index.docker.io/nginx", "index.docker.io/library/nginx",
	"nginx@sha256:" + hex64("3"), "nginx-unprivileged", "library/nginx/x", "docker.io/library/nginx/../x",
	"busybox:1.36", "docker.io/busybox:1.36", "library/busybox:1.36", "busybox:1.37", "busybox", "busybox:1.36@sha256:" + hex64("3"),
	"istio/proxyv2:1.24", "docker.io/istio/proxyv2", "index.docker.io/istio/proxyv2@sha256:" + hex64("4"),
	"localhost:5000/proxy", "localhost:5000/proxy:v1", "localhost:5001/proxy", "localhost/proxy", "localhost/proxy:v1", "proxy", "docker.io/localhost/proxy",
}

func hex64(digit string) string {
	s := ""
	for range 64 {
		s += digit
	}
	return s
}

// TestImagesReadAsTheRuntime (issue 21, class 4): for every image a pod's
// author writes under each entry's name, running as the proxy, the policy
// trusts it only when the container runtime pulls what the entry names:
// the same repository as github.com/distribution/reference reads both
// (ParseDockerRef, containerd's reader: docker.io and library/ filled in,
// a digest winning over a tag), and the entry's digest, or its tag with no
// digest, when it has one. It also trusts every form of the repository
// the runtime reads as the same (so normalising is no way around it, nor a
// way to be refused for nothing), at least those listed below.
func TestImagesReadAsTheRuntime(t *testing.T) {
	var entries []any
	for i, image := range imageEntries {
		entries = append(entries, map[string]any{"name": fmt.Sprintf("e%d", i), "image": image})
	}
	c := compile(t, chartPolicy(t, testValuesWith(func(policy map[string]any) { policy["proxyContainers"] = entries })))
	params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	ns := namespace("team", namespaceLabel, "enabled")
	mustTrust := map[string][]string{
		"registry.example/envoy":         {"registry.example/envoy", "registry.example/envoy:v1", "registry.example/envoy:v1@sha256:" + hex64("2")},
		"registry.example/pinned:v1":     {"registry.example/pinned:v1"},
		"envoyproxy/envoy":               {"envoyproxy/envoy:v1.30", "docker.io/envoyproxy/envoy:v1.30", "index.docker.io/envoyproxy/envoy"},
		"nginx":                          {"nginx", "library/nginx", "docker.io/nginx", "docker.io/library/nginx:1.25", "index.docker.io/nginx", "index.docker.io/library/nginx"},
		"docker.io/library/busybox:1.36": {"busybox:1.36", "docker.io/busybox:1.36", "library/busybox:1.36"},
		"index.docker.io/istio/proxyv2":  {"istio/proxyv2:1.24", "docker.io/istio/proxyv2"},
		"localhost:5000/proxy":           {"localhost:5000/proxy:v1"},
	}
	trustedCount := 0
	for i, entry := range imageEntries {
		name := fmt.Sprintf("e%d", i)
		want, err := reference.ParseNormalizedNamed(entry)
		if err != nil {
			t.Fatalf("entry %q: %v", entry, err)
		}
		for _, image := range podImages {
			p := pod("p", injected, asProxy(name, image))
			var trusted []string
			c.eval(t, request{object: p, namespace: ns, params: params}, []string{"variables.trusted"}, &trusted)
			isTrusted := slices.Contains(trusted, name)
			if isTrusted {
				trustedCount++
			}
			got, err := reference.ParseDockerRef(image)
			if isTrusted && (err != nil || !pullsWhatEntryNames(want, got)) {
				t.Errorf("entry %q trusts image %q, which the runtime reads as %v (%v)", entry, image, got, err)
			}
			if slices.Contains(mustTrust[entry], image) && !isTrusted {
				t.Errorf("entry %q does not trust image %q", entry, image)
			}
		}
	}
	t.Logf("%d of %d (entry, image) pairs trusted", trustedCount, len(imageEntries)*len(podImages))
}

// pullsWhatEntryNames reports whether the runtime, pulling got, pulls what
// entry names: its repository, and its digest or (with no digest) its tag.
func pullsWhatEntryNames(entry reference.Named, got reference.Named) bool {
	if got.Name() != entry.Name() {
		return false
	}
	gotDigest, _ := got.(reference.Digested)
	if d, ok := entry.(reference.Digested); ok {
		return gotDigest != nil && gotDigest.Digest() == d.Digest()
	}
	if tag, ok := entry.(reference.Tagged); ok {
		gotTag, _ := got.(reference.Tagged)
		return gotDigest == nil && gotTag != nil && gotTag.Tag() == tag.Tag()
	}
	return true
}
