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
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// crd is the part of a CustomResourceDefinition the reference shows.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
			Columns []struct {
				Name     string `json:"name"`
				JSONPath string `json:"jsonPath"`
			} `json:"additionalPrinterColumns"`
			Schema struct {
				OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// crdReference is the whole reference page of a CRD (source is its path, for
// the header): what the API server serves, each version's printer columns
// and every field under spec, with its type, default, limits and the
// description the Go types' comments gave it.
func crdReference(source string, manifest []byte) (string, error) {
	var c crd
	if err := yaml.Unmarshal(manifest, &c); err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	s := c.Spec
	if s.Names.Kind == "" || len(s.Versions) == 0 {
		return "", fmt.Errorf("%s: no kind or no versions", source)
	}
	out := []string{
		"<!-- Generated from " + source + " (itself generated from api/) by make generate. Do not edit: hack/docs's TestGeneratedFilesAreCurrent fails when this is stale. -->",
		"# " + s.Names.Kind + " reference",
		"",
		fmt.Sprintf("Group `%s`, kind `%s`, resource `%s`, %s. How to use it, with examples: [RedirectPolicy](redirectpolicy.md).",
			s.Group, s.Names.Kind, s.Names.Plural, strings.ToLower(s.Scope)),
	}
	for _, v := range s.Versions {
		root := v.Schema.OpenAPIV3Schema
		if root == nil || root.Properties["spec"] == nil {
			return "", fmt.Errorf("%s: version %s has no spec in its schema", source, v.Name)
		}
		var columns []string
		for _, col := range v.Columns {
			columns = append(columns, fmt.Sprintf("%s (`%s`)", col.Name, col.JSONPath))
		}
		out = append(out, "", "## "+s.Group+"/"+v.Name, "",
			fmt.Sprintf("Served: %v. Storage version: %v. `kubectl get %s` shows: %s.", v.Served, v.Storage, s.Names.Plural, strings.Join(columns, ", ")),
			"", markdown(paragraphs(root.Description)))
		out = append(out, fields("spec", root.Properties["spec"])...)
	}
	return strings.Join(out, "\n") + "\n", nil
}

// fields is a section for the field at path and one for each field under
// it, in name order: its description, then what its values may be.
func fields(path string, s *schema) []string {
	out := []string{"", "### `" + path + "`", "", markdown(paragraphs(s.Description)), "", facts(s)}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, fields(path+"."+name, s.Properties[name])...)
	}
	return out
}

// facts is what the schema says about a field's values, in a sentence or
// two.
func facts(s *schema) string {
	t := strings.Join(s.types(nil), " or ")
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	if s.Items != nil && s.Items.Format != "" {
		t += " (" + s.Items.Format + ")"
	}
	parts := []string{"Type: " + markdown(t)}
	if s.ListType == "set" {
		parts = append(parts, "a set (no entry twice)")
	}
	if s.MaxItems != nil {
		parts = append(parts, fmt.Sprintf("at most %d entries", *s.MaxItems))
	}
	parts = append(parts, limits("", s)...)
	if s.Items != nil {
		parts = append(parts, limits("each ", s.Items)...)
	}
	if len(s.Default) > 0 {
		parts = append(parts, "default `"+string(s.Default)+"`")
	}
	out := strings.Join(parts, ", ") + "."
	if s.Items != nil && s.Items.Description != "" {
		out += " Each entry: " + markdown(strings.TrimSuffix(paragraphs(s.Items.Description), ".")) + "."
	}
	return out
}

// limits are a schema's bounds on a value, each starting with prefix.
func limits(prefix string, s *schema) []string {
	var out []string
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		out = append(out, prefix+number(*s.Minimum)+"-"+number(*s.Maximum))
	case s.Minimum != nil:
		out = append(out, prefix+"at least "+number(*s.Minimum))
	case s.Maximum != nil:
		out = append(out, prefix+"at most "+number(*s.Maximum))
	}
	if s.MaxLength != nil {
		out = append(out, fmt.Sprintf("%sat most %d characters", prefix, *s.MaxLength))
	}
	if s.Pattern != "" {
		out = append(out, fmt.Sprintf("%smatching `%s`", prefix, s.Pattern))
	}
	for _, v := range s.Validations {
		out = append(out, prefix+"checked: "+markdown(oneLine(v.Message)))
	}
	return out
}

// number is a schema's bound as written, never in exponent form.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// paragraphs joins a description's lines, keeping its empty lines.
func paragraphs(text string) string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		out = append(out, oneLine(p))
	}
	return strings.Join(out, "\n\n")
}
