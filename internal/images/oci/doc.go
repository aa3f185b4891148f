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

// Package oci builds container images without a container daemon and
// writes them as OCI archives (an OCI image layout in a tar), the form that
// `ctr -n k8s.io images import` and registries' clients accept.
//
// It is generic: the recipes in internal/images (the parent package) decide
// what goes in each of meshinit's images; this package only provides the
// steps, each in its own file:
//
//   - platform.go: one target architecture, named the Go, Debian and OCI way.
//   - debian.go: fetch Debian packages and their dependencies for a
//     platform with apt, into a cache reused across builds, and unpack them.
//   - elf.go: find the shared libraries (and loader) that ELF programs need,
//     by reading DT_NEEDED, inside an unpacked root.
//   - layer.go: a layer from a list of files, reproducibly: sorted entries,
//     fixed modification times, owner root, extended attributes as PAX
//     records; caps.go: file capabilities, one such attribute.
//   - image.go: an image from layers plus a config (entrypoint, env, user,
//     labels), with fixed creation time.
//   - archive.go: write an image or an image index as an OCI archive with a
//     reference name, and read one back; unpack.go: unpack an image's root
//     file system into a directory (tests use it to run what they built).
//
// The same inputs give the same bytes, so the same image digest.
//
// # Why not mmdebstrap
//
// debian.go runs apt-get on a private root instead of a root file system
// builder such as mmdebstrap (--variant=extract --include=iptables, which
// resolves, downloads and unpacks the same packages without a daemon).
// Tried for the redirector image (mmdebstrap's root fed to the recipe's
// choice of files and NewLayer), it gave the same iptables layer, byte for
// byte, on amd64 and arm64, twice, in about the same time; it would have
// replaced most of debian.go only by giving up its cache. Without the
// cache every build fetches the package lists and packages again (about
// 13 MB per architecture), cannot build offline, and repeats its digest
// only until the mirror changes, where debian.go repeats it until asked to
// refresh. Keeping a cache around mmdebstrap takes seeding hooks, skip
// options and copying back, which leaves about a hundred lines saved for a
// new dependency, and it unpacks packages without their file lists, so a
// recipe would choose files by path rules rather than by what a package
// ships.
//
// Start with [NewLayer], [NewImage] and [WriteArchive]; [FetchDebs] when the
// image needs Debian's programs.
package oci
