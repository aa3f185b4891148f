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

// Package release is what `make release` does beyond building the
// binaries: it pushes meshinit's images (internal/images) to a registry,
// pins the chart to the digests the registry answered with, packages the
// chart with Helm's chartutil and pushes it as an OCI artifact with Helm's
// registry client, so that
//
//	helm install meshinit oci://<registry>/meshinit --version <version>
//
// pulls every image by digest. The kubectl plugin's archives, checksums,
// krew manifest and the changelog are GoReleaser's (.goreleaser.yaml, run
// by hack/release).
//
// PinChart (chart.go) is pure: a chart and digests in, a chart out.
// PushChart (push.go) and Images (images.go) talk to the registry.
package release
