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
	"fmt"

	"github.com/meshinit/meshinit/charts"
)

const (
	// Registry is where every image is published (the chart's default
	// repositories live under it).
	Registry = "ghcr.io/meshinit"
	// Source is every image's org.opencontainers.image.source label.
	Source = "https://github.com/meshinit/meshinit"
)

// module is this module's path, the prefix of every package built.
const module = "github.com/meshinit/meshinit"

// redirectorBin is the redirector image's program (redirector.go).
var redirectorBin = binary{pkg: module + "/initimage/cmd/redirector", versionVar: module + "/initimage.Version"}

// Users every Go image knows by name (for ps, logs, debugging).
const (
	nonrootUID = 65532
	proxyUID   = 1337
)

// testserver is the test app's and the test proxy's program.
const testserver = module + "/internal/testproxy/cmd/testserver"

var (
	webhookImage = GoImage{
		Package:     module + "/webhook/cmd/meshinit-webhook",
		VersionVar:  module + "/webhook.Version",
		User:        fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		Title:       "meshinit webhook",
		Description: "Mutating admission webhook that adds meshinit's redirect init container to the pods that opt in",
	}
	testAppImage = GoImage{
		Package:     testserver,
		Cmd:         []string{"-name", "app", "-listen", ":8080"},
		User:        fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		Title:       "meshinit test app",
		Description: "Test server answering with its name and the original destination; the app of meshinit's tests",
	}
	testProxyImage = GoImage{
		Package:     testserver,
		Cmd:         []string{"-name", "proxy", "-listen", ":15001,:15006"},
		User:        fmt.Sprintf("%d:%d", proxyUID, proxyUID),
		Title:       "meshinit test proxy",
		Description: "Test server answering with its name and the original destination, run as the proxy UID 1337; the proxy of meshinit's tests",
	}
	// goImages are the images Build builds beside the redirector, by their
	// repository under Registry, in build order.
	goImages = []struct {
		name string
		img  GoImage
	}{{"webhook", webhookImage}, {"test-app", testAppImage}, {"test-proxy", testProxyImage}}
)

// Names lists every image Build builds, in build order: redirector,
// webhook, test-app, test-proxy.
func Names() []string {
	names := []string{"redirector"}
	for _, g := range goImages {
		names = append(names, g.name)
	}
	return names
}

// Ref is the reference of image name at version: Registry/name:version.
func Ref(name, version string) string { return Registry + "/" + name + ":" + version }

// DefaultVersion is the chart's appVersion, so that the chart's default
// image references name exactly what Build builds.
func DefaultVersion() (string, error) {
	ch, err := charts.Load()
	if err != nil {
		return "", err
	}
	return ch.Metadata.AppVersion, nil
}
