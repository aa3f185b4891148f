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

// Package images holds the recipe of every meshinit container image and
// builds them as reproducible OCI archives without a container daemon;
// `make images` (hack/images), the end-to-end tests and the demo all build
// them with Build. How an image is made (layers, configs, archives, Debian
// packages) is the generic subpackage oci; what goes into each image is
// here:
//
//   - redirector (redirector.go): the init container. The static
//     redirector at /usr/local/bin/redirector (the entrypoint) and Debian's
//     iptables: xtables-nft-multi and xtables-legacy-multi with every
//     iptables-*/ip6tables-* link the package ships (the redirector runs
//     them by those names, never through the "iptables" alternatives link),
//     the extension modules in /usr/lib/<triplet>/xtables/, and the shared
//     libraries and loader they need. Which libraries is read from the
//     programs (DT_NEEDED), within the packages apt resolves from iptables'
//     dependencies, so the list cannot silently rot: a library that goes
//     missing fails the build. It runs as RedirectorUser (65532:0) with a
//     read-only root file system and no_new_privs, as the webhook's init
//     container does: the redirector carries the file capabilities
//     RedirectorCapabilities (security.capability, a PAX record in its
//     layer) and passes them to iptables; the legacy backend's lock file,
//     XtablesLock, is in the image.
//   - webhook (images.go): the admission webhook, a static binary run as
//     65532.
//   - test-app and test-proxy (images.go): the test server
//     (internal/testproxy) as the app (65532) and as the proxy (UID 1337),
//     for tests and `helm test`.
//
// The last three are GoImages (goimage.go): one static Go program and the
// user files, nothing else. Each program is built statically
// (CGO_ENABLED=0, -trimpath, stripped) by its full package path, so Build
// works from any directory inside the module; the redirector's and the
// webhook's Version variables are set with -ldflags -X. Tests build images
// of their own programs with BuildGoImage (e2e/cluster's sandbox image).
//
// For each image and architecture Build writes <image>-<arch>.oci.tar, and
// <image>.oci.tar, one multi-platform index of all architectures. Load one
// with `ctr -n k8s.io images import <file>`. With a push prefix it also
// pushes each index to <prefix>/<image>:<version> (go-containerregistry's
// remote, credentials from the Docker config).
//
// The version defaults to the chart's appVersion, so the chart's default
// image references name these images. Output is reproducible: the same
// sources, version and Debian packages give the same digests.
// SOURCE_DATE_EPOCH, if set, stamps the images.
//
// Start with Build (build.go); BuildRedirector builds the redirector image
// for one platform from a binary already built.
package images
