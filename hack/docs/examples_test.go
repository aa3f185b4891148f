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

package docs

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
)

// TestRedirectPolicyExamples checks the YAML examples of README.md and
// docs/*.md: each RedirectPolicy against the CRD's schema for its version
// (no unknown field, enums, bounds, list sizes: what the API server checks
// before its CEL rules), and each chart values example (a block starting
// with "# values.yaml") by rendering the chart with it, values schema
// included.
func TestRedirectPolicyExamples(t *testing.T) {
	var c crd
	if err := yaml.Unmarshal([]byte(readFile(t, "charts/meshinit/crds/meshinit.io_redirectpolicies.yaml")), &c); err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		name, _ := filepath.Rel(root, page)
		for _, b := range Blocks(readFile(t, name)) {
			text := strings.Join(b.Lines, "\n")
			if b.Lang != "yaml" {
				continue
			}
			where := fmt.Sprintf("%s:%d", name, b.Line)
			switch {
			case strings.HasPrefix(text, "# values.yaml"):
				var values map[string]any
				if err := yaml.Unmarshal([]byte(text), &values); err != nil {
					t.Errorf("%s: %v", where, err)
				} else if _, err := charts.Render(charts.Options{Values: values}); err != nil {
					t.Errorf("%s: the chart does not take these values: %v", where, err)
				}
				checked++
			case strings.Contains(text, "kind: "+c.Spec.Names.Kind):
				if err := checkObject(c, text); err != nil {
					t.Errorf("%s: %v", where, err)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Error("no example found")
	}
}

// checkObject checks a manifest of the CRD's kind against its version's
// schema.
func checkObject(c crd, manifest string) error {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		return err
	}
	for _, v := range c.Spec.Versions {
		if obj["apiVersion"] == c.Spec.Group+"/"+v.Name {
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			return checkValue("spec", obj["spec"], spec)
		}
	}
	return fmt.Errorf("apiVersion %v is not served by the CRD", obj["apiVersion"])
}

// checkValue checks a decoded value against a schema: its fields, enum,
// bounds and list size.
func checkValue(path string, v any, s *schema) error {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s.Properties[k] == nil {
				return fmt.Errorf("%s.%s: no such field", path, k)
			}
			if err := checkValue(path+"."+k, child, s.Properties[k]); err != nil {
				return err
			}
		}
	case []any:
		if s.Items == nil {
			return fmt.Errorf("%s: not a list", path)
		}
		if s.MaxItems != nil && int64(len(v)) > *s.MaxItems {
			return fmt.Errorf("%s: more than %d entries", path, *s.MaxItems)
		}
		for i, item := range v {
			if err := checkValue(fmt.Sprintf("%s[%d]", path, i), item, s.Items); err != nil {
				return err
			}
		}
	case float64:
		if (s.Minimum != nil && v < *s.Minimum) || (s.Maximum != nil && v > *s.Maximum) {
			return fmt.Errorf("%s: %v out of range", path, v)
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, s.Enum)
	}
	var types []string
	if json.Unmarshal(s.Type, &types) != nil {
		var t string
		_ = json.Unmarshal(s.Type, &t)
		types = []string{t}
	}
	if got := jsonType(v); !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
		return fmt.Errorf("%s: a %s, want %s", path, got, strings.Join(types, " or "))
	}
	return nil
}

// jsonType is the JSON schema type of a decoded value.
func jsonType(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	}
	return "null"
}
