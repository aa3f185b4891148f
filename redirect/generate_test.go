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

package redirect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
)

// The parts of other files written from the settings table, so that a new
// setting is written once, in the table. TestGeneratedFilesAreCurrent fails
// when one is out of date; `make generate` (this test with -update) rewrites
// them:
//
//   - charts/meshinit/values.schema.json: inject.redirect's keys
//   - charts/meshinit/templates/_redirect.tpl: the defaults helper and the
//     list of settings whose values must be written as the redirector
//     renders them
//   - docs/configuration.md: the settings' table (flag, annotation,
//     default, meaning)
var generated = []struct {
	path     string
	generate func(old string) (string, error)
}{
	{filepath.Join("..", "charts", "meshinit", "values.schema.json"), schemaRedirectKeys},
	{filepath.Join("..", "charts", "meshinit", "templates", "_redirect.tpl"), func(old string) (string, error) {
		return between(old, "generated from the settings table (redirect/settings.go)", "generated: end",
			func([]string) []string { return chartHelpers() })
	}},
	{filepath.Join("..", "docs", "configuration.md"), func(old string) (string, error) {
		return between(old, "<!-- redirect settings: generated", "<!-- end of redirect settings",
			func([]string) []string { return settingsTable() })
	}},
}

// annotationPrefix starts every setting's annotation.
const annotationPrefix = "traffic.meshinit.io/"

// TestAnnotationsAreKeys: a setting's annotation is its key after
// annotationPrefix, as the policy (meshinit.policy.listSources) reads it.
func TestAnnotationsAreKeys(t *testing.T) {
	for _, s := range settings {
		if s.annotation != "" && s.annotation != annotationPrefix+s.key {
			t.Errorf("setting %s: annotation %s, want %s", s.key, s.annotation, annotationPrefix+s.key)
		}
	}
}

func TestGeneratedFilesAreCurrent(t *testing.T) {
	for _, f := range generated {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			old, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			current, err := f.generate(string(old))
			if err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
			testkit.Golden(t, f.path, []byte(current))
		})
	}
}

// between replaces the lines strictly between the line containing begin and
// the next one containing end with body(the lines it replaces).
func between(doc, begin, end string, body func(old []string) []string) (string, error) {
	lines := strings.Split(doc, "\n")
	b := -1
	for i, l := range lines {
		if b < 0 && strings.Contains(l, begin) {
			b = i
		} else if b >= 0 && strings.Contains(l, end) {
			out := append(append(append([]string{}, lines[:b+1]...), body(lines[b+1:i])...), lines[i:]...)
			return strings.Join(out, "\n"), nil
		}
	}
	return "", fmt.Errorf("no lines between markers %q and %q", begin, end)
}

// settingsTable is the reference table of the settings: each one's
// redirector flag (its key, which is also its chart key under
// inject.redirect), the pod annotation that sets it, its default
// and its usage.
func settingsTable() []string {
	out := []string{"| flag | pod annotation | default | meaning |", "| --- | --- | --- | --- |"}
	d := Defaults()
	for _, s := range settings {
		def := " "
		if v := s.get(&d); v != "" {
			def = " `" + v + "` "
		}
		annotation := "none: the chart's value only"
		if s.annotation != "" {
			annotation = "`" + s.annotation + "`"
		}
		out = append(out, fmt.Sprintf("| `--%s` | %s |%s| %s |", s.key, annotation, def, markdown(s.usage)))
	}
	return out
}

var quoted = regexp.MustCompile(`"([^"]*)"`)

// markdown sets a usage line in a table cell: "quoted" text as code.
func markdown(usage string) string {
	return strings.ReplaceAll(quoted.ReplaceAllString(usage, "`$1`"), "|", `\|`)
}

// chartHelpers are the chart's helpers that know the settings by name.
func chartHelpers() []string {
	d := Defaults()
	out := []string{
		"{{- /*",
		"meshinit.redirect.defaults: redirect.Defaults, one \"key=value\" line per",
		"setting, in the order of the settings table (the order of Config.Args).",
		"*/ -}}",
		`{{- define "meshinit.redirect.defaults" -}}`,
	}
	for _, s := range settings {
		out = append(out, s.key+"="+s.get(&d))
	}
	out = append(out, "{{- end -}}", "",
		"{{- /*",
		"meshinit.redirect.canonicalLists: the port-list settings pods cannot set,",
		"one a line. The policy compares their arguments with the chart's values,",
		"so those must be written as Config.Args renders them: each entry once.",
		"*/ -}}",
		`{{- define "meshinit.redirect.canonicalLists" -}}`)
	var ordered []string
	for _, s := range settings {
		if s.kind == kindPorts && s.annotation == "" {
			ordered = append(ordered, s.key)
		}
	}
	out = append(out, strings.Join(ordered, "\n"), "{{- end -}}", "",
		"{{- /*",
		"meshinit.redirect.podSettings: the settings pods set by annotation",
		"(traffic.meshinit.io/<key>), one a line as \"<key> <kind>\" (kind: port, id,",
		"enum, ports, cidrs, ids or names). The policy checks their values against",
		"the RedirectPolicy instead of comparing them with the chart's.",
		"*/ -}}",
		`{{- define "meshinit.redirect.podSettings" -}}`)
	var pod []string
	for _, s := range settings {
		if s.annotation != "" {
			pod = append(pod, s.key+" "+kindNames[s.kind])
		}
	}
	out = append(out, strings.Join(pod, "\n"), "{{- end -}}", "",
		"{{- /* meshinit.redirect.maxListBytes, maxListEntries: the list limits (MaxListBytes, MaxListEntries). */ -}}",
		`{{- define "meshinit.redirect.maxListBytes" -}}`+strconv.Itoa(MaxListBytes)+"{{- end -}}",
		`{{- define "meshinit.redirect.maxListEntries" -}}`+strconv.Itoa(MaxListEntries)+"{{- end -}}", "",
		"{{- /*",
		"meshinit.redirect.table: the settings table, as JSON, in its order: each",
		"setting's key, the pod annotation that sets it (\"\" when pods cannot), its",
		"kind (port, id, ports, cidrs, ids, names, enum) and an enum's values. The",
		"MutatingAdmissionPolicy reads and renders each setting by its kind",
		"(_inject.tpl), so a new setting of a known kind needs nothing more.",
		"*/ -}}",
		`{{- define "meshinit.redirect.table" -}}`)
	for i, s := range settings {
		row, err := json.Marshal(struct {
			Key        string   `json:"key"`
			Annotation string   `json:"annotation"`
			Kind       string   `json:"kind"`
			Values     []string `json:"values,omitempty"`
		}{s.key, s.annotation, kindNames[s.kind], s.values})
		if err != nil {
			panic(err)
		}
		line := " " + string(row) + ","
		switch {
		case len(settings) == 1:
			line = "[" + string(row) + "]"
		case i == 0:
			line = "[" + string(row) + ","
		case i == len(settings)-1:
			line = " " + string(row) + "]"
		}
		out = append(out, line)
	}
	return append(out, "{{- end -}}")
}

// TestKindsNamed: every kind has a name in the chart's table.
func TestKindsNamed(t *testing.T) {
	for _, s := range settings {
		if kindNames[s.kind] == "" {
			t.Errorf("setting %s: its kind %d has no name in kindNames (and no CEL in the chart's _inject.tpl)", s.key, s.kind)
		}
	}
}

// kindNames are the kinds as the chart's helpers and settings table name them.
var kindNames = map[kind]string{kindPort: "port", kindID: "id", kindEnum: "enum", kindPorts: "ports", kindCIDRs: "cidrs", kindIDs: "ids", kindInterfaces: "names"}

// schemaRedirectKeys rewrites the properties of inject.redirect in
// values.schema.json, the first "properties" object after the "redirect"
// key, one setting a line.
func schemaRedirectKeys(old string) (string, error) {
	lines := strings.Split(old, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == `"redirect": {` {
			start = i
			break
		}
	}
	for i := start + 1; start >= 0 && i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != `"properties": {` {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], indent+"}") {
				props, err := schemaProperties(indent + "  ")
				if err != nil {
					return "", err
				}
				out := append(append(append([]string{}, lines[:i+1]...), props...), lines[j:]...)
				return strings.Join(out, "\n"), nil
			}
		}
	}
	return "", fmt.Errorf(`no "properties" object after "redirect"`)
}

// schemaProperties is each setting's schema. A setting pods cannot set is
// compared by the policy with the init container's argument, so its value
// must be written as Config.Args renders it: the redirect* definitions say
// how; a setting pods set is left to the webhook to check.
func schemaProperties(indent string) ([]string, error) {
	var out []string
	for i, s := range settings {
		var schema string
		switch {
		case s.kind == kindPort:
			schema = `{"$ref": "#/definitions/redirectPort"}`
		case s.kind == kindID:
			schema = `{"$ref": "#/definitions/redirectID"}`
		case s.kind == kindEnum:
			schema = `{"type": "string", "enum": ["` + strings.Join(s.values, `", "`) + `"]}`
		case s.annotation != "":
			schema = `{"$ref": "#/definitions/redirectValue"}`
		case s.kind == kindPorts:
			schema = `{"$ref": "#/definitions/redirectPortList"}`
		case s.kind == kindIDs:
			schema = `{"$ref": "#/definitions/redirectIDList"}`
		case s.kind == kindInterfaces:
			schema = `{"$ref": "#/definitions/redirectInterfaceList"}`
		default:
			return nil, fmt.Errorf("setting %s: no schema for a CIDR list pods cannot set; write a definition of the form CIDRList.String renders", s.key)
		}
		line := fmt.Sprintf("%s%q: %s", indent, s.key, schema)
		if i < len(settings)-1 {
			line += ","
		}
		out = append(out, line)
	}
	return out, nil
}
