// Package chart renders meshinit's Helm chart (charts/meshinit) with Helm's
// Go packages. Tests and tools use it so every manifest has exactly one copy:
// the chart's template.
package chart

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Dir is the chart's directory in this repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "meshinit")
}

// Load reads the chart from Dir.
func Load() (*chart.Chart, error) {
	return loader.Load(Dir())
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
		return nil, fmt.Errorf("loading chart %s: %w", Dir(), err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if opts.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(opts.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kube version %q: %w", opts.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
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
