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
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
)

// PackageChart writes ch as Helm packages it, <dir>/<name>-<version>.tgz,
// and returns the file.
func PackageChart(ch *chart.Chart, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		return "", fmt.Errorf("release: packaging chart %s: %w", ch.Name(), err)
	}
	return filepath.Clean(file), nil
}

// PushChart pushes the chart archive file to prefix (a registry and path,
// "registry.example/meshinit") as Helm pushes it, so that
// oci://<prefix>/<name> --version <version> installs it; it returns the
// reference pushed, "<prefix>/<name>:<version>@<digest>". Loopback and
// private-network registries are spoken to over plain HTTP, as the images
// are pushed (go-containerregistry's rule); credentials are Helm's
// (helm registry login).
func PushChart(file, prefix string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	ch, err := loadArchive(data)
	if err != nil {
		return "", fmt.Errorf("release: %s: %w", file, err)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	repo, err := name.NewRepository(prefix+"/"+ch.Name(), name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("release: registry %q: %w", prefix, err)
	}
	var opts []registry.ClientOption
	if repo.Registry.Scheme() == "http" {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return "", err
	}
	ref := repo.String() + ":" + ch.Metadata.Version
	res, err := client.Push(data, ref)
	if err != nil {
		return "", fmt.Errorf("release: pushing chart to %s: %w", ref, err)
	}
	return ref + "@" + res.Manifest.Digest, nil
}

// loadArchive loads a packaged chart as Helm loads one.
func loadArchive(data []byte) (*chart.Chart, error) {
	return loader.LoadArchive(bytes.NewReader(data))
}
