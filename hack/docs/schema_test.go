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
	"regexp"
	"slices"
	"strings"
)

// schema is the part of a JSON schema (values.schema.json) or of a CRD's
// OpenAPI v3 schema that the references show.
type schema struct {
	Type        json.RawMessage    `json:"type"` // a string, or a list of them
	Format      string             `json:"format"`
	Description string             `json:"description"`
	Default     json.RawMessage    `json:"default"`
	Enum        []any              `json:"enum"`
	Minimum     *float64           `json:"minimum"`
	Maximum     *float64           `json:"maximum"`
	MaxItems    *int64             `json:"maxItems"`
	MaxLength   *int64             `json:"maxLength"`
	Pattern     string             `json:"pattern"`
	Items       *schema            `json:"items"`
	Properties  map[string]*schema `json:"properties"`
	Ref         string             `json:"$ref"`
	AnyOf       []*schema          `json:"anyOf"`
	ListType    string             `json:"x-kubernetes-list-type"`
	Validations []struct {
		Message string `json:"message"`
	} `json:"x-kubernetes-validations"`
}

// types are the schema's type names: its "type" (one or a list), an enum's
// values, or its alternatives' types, with definitions resolved.
func (s *schema) types(definitions map[string]*schema) []string {
	if s == nil {
		return nil
	}
	if s.Ref != "" {
		return s.resolve(definitions).types(definitions)
	}
	if len(s.Enum) > 0 {
		return []string{"one of " + s.enum()}
	}
	var out []string
	add := func(t string) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	var names []string
	if err := json.Unmarshal(s.Type, &names); err != nil {
		var name string
		if json.Unmarshal(s.Type, &name) == nil {
			names = []string{name}
		}
	}
	for _, t := range names {
		if t == "array" && s.Items != nil {
			t = "list of " + strings.Join(s.Items.types(definitions), " or ")
		}
		add(t)
	}
	for _, alt := range s.AnyOf {
		for _, t := range alt.types(definitions) {
			add(t)
		}
	}
	return out
}

// resolve follows the schema's $ref into definitions.
func (s *schema) resolve(definitions map[string]*schema) *schema {
	for s != nil && s.Ref != "" {
		s = definitions[strings.TrimPrefix(s.Ref, "#/definitions/")]
	}
	return s
}

// enum is the schema's allowed values as code, or "".
func (s *schema) enum() string {
	var vals []string
	for _, v := range s.Enum {
		vals = append(vals, fmt.Sprintf("`%v`", v))
	}
	return strings.Join(vals, ", ")
}

var quoted = regexp.MustCompile(`"([^"\s][^"]*)"`)

// markdown sets a comment or a description as Markdown for a table cell or a
// paragraph: "quoted" text as code; outside code "<", ">" and "*" kept from
// being read as HTML or emphasis; "|" escaped everywhere (GitHub reads it
// as a cell's end even in code).
func markdown(text string) string {
	parts := strings.Split(quoted.ReplaceAllString(text, "`$1`"), "`")
	for i, p := range parts {
		if i%2 == 0 {
			p = strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`).Replace(p)
		}
		parts[i] = strings.ReplaceAll(p, "|", `\|`)
	}
	return strings.Join(parts, "`")
}

// oneLine joins a comment's or a description's lines into one.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
