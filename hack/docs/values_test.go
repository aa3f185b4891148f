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
	"strings"

	"go.yaml.in/yaml/v3"
)

// valuesReference is the chart values reference: for each top-level key of
// values.yaml a heading, the comment above the key, and a table of the keys
// under it (the key, its type from values.schema.json, its default from
// values.yaml, the comment above it). values.yaml's comments are the one
// place a value is described; this only sets them out.
func valuesReference(valuesYAML, schemaJSON []byte) ([]string, error) {
	var root struct {
		schema
		Definitions map[string]*schema `json:"definitions"`
	}
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return nil, fmt.Errorf("values.schema.json: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(valuesYAML, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: not a mapping")
	}
	v := valuesWalk{definitions: root.Definitions}
	top := doc.Content[0]
	for i := 0; i < len(top.Content); i += 2 {
		key, val := top.Content[i], top.Content[i+1]
		s := root.Properties[key.Value]
		if s == nil {
			return nil, fmt.Errorf("values.yaml: %s is not in values.schema.json", key.Value)
		}
		v.out = append(v.out, "", "### `"+key.Value+"`", "", markdown(description(key)))
		if !nested(val) {
			v.out = append(v.out, "", fmt.Sprintf("Type: %s. Default: %s.", v.typeOf(s), defaultOf(val)))
			continue
		}
		v.out = append(v.out, "", "| key | type | default | meaning |", "| --- | --- | --- | --- |")
		if err := v.rows(key.Value, val, s); err != nil {
			return nil, err
		}
	}
	return v.out, nil
}

// valuesWalk collects the reference's lines.
type valuesWalk struct {
	definitions map[string]*schema
	out         []string
}

// rows adds a row for each key of the mapping at path, and the rows of
// those that are sections of their own.
func (v *valuesWalk) rows(path string, mapping *yaml.Node, s *schema) error {
	s = s.resolve(v.definitions)
	prev := ""
	for i := 0; i < len(mapping.Content); i += 2 {
		key, val := mapping.Content[i], mapping.Content[i+1]
		p := path + "." + key.Value
		child := s.Properties[key.Value]
		if child == nil {
			return fmt.Errorf("values.yaml: %s is not in values.schema.json", p)
		}
		text := description(key)
		if text == "" && prev != "" && strings.Contains(prev, key.Value) {
			text = fmt.Sprintf("See `%s` above.", path+"."+mapping.Content[i-2].Value)
		}
		prev = text
		if nested(val) {
			if text != "" {
				v.out = append(v.out, fmt.Sprintf("| `%s` | | | %s |", p, markdown(text)))
			}
			if err := v.rows(p, val, child); err != nil {
				return err
			}
			continue
		}
		v.out = append(v.out, fmt.Sprintf("| `%s` | %s | %s | %s |", p, v.typeOf(child), defaultOf(val), markdown(text)))
	}
	return nil
}

func (v *valuesWalk) typeOf(s *schema) string {
	return markdown(strings.Join(s.types(v.definitions), " or "))
}

// nested: a mapping with a key that has a comment of its own is a section,
// its keys in rows of their own; any other value is shown whole.
func nested(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		if comment(n.Content[i]) != "" || nested(n.Content[i+1]) {
			return true
		}
	}
	return false
}

// description is the comment above a key without a leading "key: ",
// which the heading or the table's first column already says.
func description(key *yaml.Node) string {
	text, ok := strings.CutPrefix(comment(key), key.Value+": ")
	if !ok || text == "" {
		return text
	}
	return strings.ToUpper(text[:1]) + text[1:]
}

// comment is the comment above a key, in one line: its last paragraph
// (an earlier one, apart from it by an empty line, is about something
// else).
func comment(key *yaml.Node) string {
	paragraphs := strings.Split(strings.TrimSpace(key.HeadComment), "\n\n")
	var lines []string
	for _, l := range strings.Split(paragraphs[len(paragraphs)-1], "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimSpace(l), "#"))
	}
	return oneLine(strings.Join(lines, " "))
}

// defaultOf is a value as code, in YAML's flow style.
func defaultOf(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == "" {
		return "`\"\"`"
	}
	flow := flowCopy(n)
	b, err := yaml.Marshal(flow)
	if err != nil {
		panic(err) // a node just read from YAML
	}
	return "`" + strings.ReplaceAll(strings.TrimSpace(string(b)), "|", `\|`) + "`"
}

// flowCopy is a copy of n in flow style without comments.
func flowCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if c.Kind != yaml.ScalarNode {
		c.Style = yaml.FlowStyle
	}
	c.Content = nil
	for _, child := range n.Content {
		c.Content = append(c.Content, flowCopy(child))
	}
	return &c
}
