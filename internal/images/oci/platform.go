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
	"debug/elf"
	"fmt"
	"path"
	"runtime"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Platform is one target architecture of linux images, named each way the
// tools involved spell it.
type Platform struct {
	// GOARCH is Go's name for the architecture, e.g. "arm64".
	GOARCH string
	// DebianArch is Debian's name, e.g. "arm64".
	DebianArch string
	// Triplet is the multiarch tuple of library directories, e.g.
	// "aarch64-linux-gnu" in /usr/lib/aarch64-linux-gnu.
	Triplet string
	// Machine is the ELF machine of its programs.
	Machine elf.Machine
}

var platforms = map[string]Platform{
	"amd64": {GOARCH: "amd64", DebianArch: "amd64", Triplet: "x86_64-linux-gnu", Machine: elf.EM_X86_64},
	"arm64": {GOARCH: "arm64", DebianArch: "arm64", Triplet: "aarch64-linux-gnu", Machine: elf.EM_AARCH64},
}

// LookupPlatform returns the linux platform of a Go architecture name
// ("amd64", "arm64").
func LookupPlatform(goarch string) (Platform, error) {
	p, ok := platforms[goarch]
	if !ok {
		return Platform{}, fmt.Errorf("unsupported architecture %q (supported: %v)", goarch, SupportedArchs())
	}
	return p, nil
}

// HostPlatform is the platform of the running program.
func HostPlatform() (Platform, error) { return LookupPlatform(runtime.GOARCH) }

// SupportedArchs lists the Go architecture names LookupPlatform accepts.
func SupportedArchs() []string {
	archs := make([]string, 0, len(platforms))
	for a := range platforms {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	return archs
}

// OCI is the platform as image configs and indexes record it.
func (p Platform) OCI() v1.Platform {
	op := v1.Platform{OS: "linux", Architecture: p.GOARCH}
	if p.GOARCH == "arm64" {
		op.Variant = "v8"
	}
	return op
}

// LibDirs are the directories the dynamic loader searches by default, in
// its order: the multiarch directories first.
func (p Platform) LibDirs() []string {
	return []string{
		path.Join("/lib", p.Triplet),
		path.Join("/usr/lib", p.Triplet),
		"/lib",
		"/usr/lib",
	}
}

// String returns "linux/<goarch>".
func (p Platform) String() string { return "linux/" + p.GOARCH }
