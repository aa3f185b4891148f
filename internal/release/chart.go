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
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// ImageValues are where each image's value ({repository, tag, digest}) is
// in the chart's values, by image name (internal/images.Names).
var ImageValues = map[string][]string{
	"redirector": {"inject", "image"},
	"webhook":    {"webhook", "image"},
	"test-app":   {"tests", "image", "app"},
	"test-proxy": {"tests", "image", "proxy"},
}

// Image is one image as a registry holds it: Repository
// ("registry.example/meshinit/webhook") and the Digest of its index.
type Image struct {
	Repository string
	Digest     string
}

// PinChart sets ch's version and appVersion to version and every image of
// ImageValues to images[name] (repository, tag version, digest), editing
// values.yaml's text so that its comments stay for `helm show values`.
// Every image of ImageValues must be given: a release pins them all.
func PinChart(ch *chart.Chart, version string, images map[string]Image) error {
	for name := range ImageValues {
		im, ok := images[name]
		if !ok {
			return fmt.Errorf("release: no digest for image %q (a release pins every image)", name)
		}
		if !strings.HasPrefix(im.Digest, "sha256:") || len(im.Digest) != len("sha256:")+64 {
			return fmt.Errorf("release: image %q: digest %q is not sha256:<64 hex digits>", name, im.Digest)
		}
	}
	for name := range images {
		if _, ok := ImageValues[name]; !ok {
			return fmt.Errorf("release: image %q is not in the chart's values", name)
		}
	}
	i := slices.IndexFunc(ch.Raw, func(f *chart.File) bool { return f.Name == chartutil.ValuesfileName })
	if i < 0 {
		return fmt.Errorf("release: chart %s has no %s", ch.Name(), chartutil.ValuesfileName)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(ch.Raw[i].Data, &doc); err != nil {
		return fmt.Errorf("release: %s: %w", chartutil.ValuesfileName, err)
	}
	for name, path := range ImageValues {
		im := images[name]
		for key, value := range map[string]string{"repository": im.Repository, "tag": version, "digest": im.Digest} {
			if err := setString(&doc, append(slices.Clone(path), key), value); err != nil {
				return fmt.Errorf("release: %s: %w", chartutil.ValuesfileName, err)
			}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	values, err := chartutil.ReadValues(b.Bytes())
	if err != nil {
		return err
	}
	ch.Raw[i].Data = b.Bytes()
	// Helm renders from Values and writes values.yaml from Raw
	// (chartutil.Save): both must say the same.
	ch.Values = values
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	return nil
}

// setString sets the scalar at path (mapping keys from doc's root) to
// value, as a quoted string; every key must exist already, so a renamed
// value fails here rather than pinning nothing.
func setString(doc *yaml.Node, path []string, value string) error {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for depth, key := range path {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping", strings.Join(path[:depth], "."))
		}
		next := -1
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == key {
				next = j + 1
			}
		}
		if next < 0 {
			return fmt.Errorf("no value %s", strings.Join(path[:depth+1], "."))
		}
		n = n.Content[next]
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s is not a scalar", strings.Join(path, "."))
	}
	n.Tag, n.Value, n.Style = "!!str", value, yaml.DoubleQuotedStyle
	return nil
}
