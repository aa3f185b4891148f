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

package charts

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/ignore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// embedded holds the chart's directory, dot files (.helmignore) included.
//
//go:embed all:meshinit
var embedded embed.FS

// Files are the chart's files, rooted at the chart's directory (Chart.yaml,
// values.yaml, templates/...), as they are in the repository.
func Files() fs.FS {
	files, err := fs.Sub(embedded, "meshinit")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return files
}

// Load loads the chart from [Files] as Helm loads a chart's directory:
// without what .helmignore and Helm's defaults leave out, a leading UTF-8
// byte order mark dropped. Every call returns a chart of its own.
func Load() (*chart.Chart, error) {
	files := Files()
	rules := ignore.Empty()
	if f, err := files.Open(ignore.HelmIgnore); err == nil {
		rules, err = ignore.Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the chart's %s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	var loaded []*loader.BufferedFile
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case rules.Ignore(path, info) && d.IsDir():
			return fs.SkipDir
		case rules.Ignore(path, info) || d.IsDir():
			return nil
		}
		data, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		loaded = append(loaded, &loader.BufferedFile{Name: path, Data: bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the chart's files: %w", err)
	}
	return loader.LoadFiles(loaded)
}

// Options say how to render.
type Options struct {
	// ReleaseName defaults to "meshinit"; Namespace to "meshinit-system".
	ReleaseName, Namespace string
	// Values override the chart's values.yaml.
	Values map[string]any
	// IncludeCRDs adds the chart's crds/ files first, as helm install does.
	IncludeCRDs bool
	// KubeVersion is the cluster's version the templates see
	// (.Capabilities.KubeVersion), e.g. "v1.35.0". Default Helm's default
	// capabilities (v1.20.0), as helm template without --kube-version.
	KubeVersion string
	// APIVersions are added to what .Capabilities.APIVersions has, as helm
	// template's --api-versions adds them ("group/version" or
	// "group/version/Kind"). Default none: Helm's default versions, which
	// name no kinds.
	APIVersions []string
}

// Render renders the chart's templates (as `helm template` would) and returns
// the manifests keyed by template path, sorted by path.
func Render(opts Options) (map[string]string, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = "meshinit"
	}
	if opts.Namespace == "" {
		opts.Namespace = "meshinit-system"
	}
	ch, err := Load()
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	return RenderChart(ch, opts)
}

// RenderChart is [Render] for another chart (the end-to-end tests render
// cert-manager's): opts.ReleaseName and opts.Namespace are used as they are.
func RenderChart(ch *chart.Chart, opts Options) (map[string]string, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	if opts.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, opts.APIVersions...)
	vals, err := chartutil.ToRenderValues(ch, opts.Values, chartutil.ReleaseOptions{
		Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("computing values: %w", err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart: %w", err)
	}
	if opts.IncludeCRDs {
		for _, crd := range ch.CRDObjects() {
			out[crd.Filename] = string(crd.File.Data)
		}
	}
	return out, nil
}

// Objects renders the chart and decodes every non-empty manifest into objects,
// CRDs first, then in template path order. Tests, hooks and NOTES.txt are
// left out unless withTests is set (tests only).
func Objects(opts Options, withTests bool) ([]*unstructured.Unstructured, error) {
	files, err := Render(opts)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		if strings.HasSuffix(p, "NOTES.txt") || (!withTests && strings.Contains(p, "/templates/tests/")) {
			continue
		}
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		ci, cj := strings.Contains(paths[i], "/crds/"), strings.Contains(paths[j], "/crds/")
		if ci != cj {
			return ci
		}
		return paths[i] < paths[j]
	})
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		decoded, err := Decode(files[p])
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", p, err)
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

// Decode decodes a stream of YAML (or JSON) manifests into objects,
// skipping empty documents.
func Decode(manifests string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}
