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

package kubectlplugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats (-o) of the plugin's own: its tables. The others (json,
// yaml, jsonpath=..., go-template=..., ...) are kubectl's, from
// cli-runtime's printers.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
)

// reportAPIVersion is the apiVersion of the reports -o json, yaml and the
// templates print: the plugin's own, not an API the cluster serves.
const reportAPIVersion = "kubectl.meshinit.io/v1alpha1"

// outputFlags are -o and the template flags, as kubectl has them.
type outputFlags struct {
	format    string
	jsonYAML  *genericclioptions.JSONYamlPrintFlags
	templates *genericclioptions.KubeTemplatePrintFlags
}

func newOutputFlags() *outputFlags {
	return &outputFlags{jsonYAML: genericclioptions.NewJSONYamlPrintFlags(), templates: genericclioptions.NewKubeTemplatePrintFlags()}
}

// formats are the -o values taken.
func (o *outputFlags) formats() []string {
	return slices.Concat([]string{outputWide}, o.jsonYAML.AllowedFormats(), o.templates.AllowedFormats())
}

// addFlags adds -o and the template flags to flags.
func (o *outputFlags) addFlags(flags *pflag.FlagSet) {
	holder := &cobra.Command{}
	o.templates.AddFlags(holder)
	o.jsonYAML.AddFlags(holder)
	flags.AddFlagSet(holder.Flags())
	flags.StringVarP(&o.format, "output", "o", outputTable, "output format: the table (default), "+strings.Join(o.formats(), ", "))
}

// table reports whether the output is one of the plugin's tables.
func (o *outputFlags) table() bool { return o.format == outputTable || o.format == outputWide }

// wide: -o wide, the tables with more columns.
func (o *outputFlags) wide() bool { return o.format == outputWide }

// printer is cli-runtime's printer for -o, or a usage error naming the
// formats taken; nil for the tables.
func (o *outputFlags) printer() (printers.ResourcePrinter, error) {
	if o.table() {
		return nil, nil
	}
	if p, err := o.jsonYAML.ToPrinter(o.format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	if p, err := o.templates.ToPrinter(o.format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		if err != nil {
			err = usageError{fmt.Errorf("--output=%s: %w", o.format, err)}
		}
		return p, err
	}
	return nil, usageError{fmt.Errorf("--output=%q: want one of %s (default: a table)", o.format, strings.Join(o.formats(), ", "))}
}

// validate fails with a usage error when -o names no format.
func (o *outputFlags) validate() error {
	_, err := o.printer()
	return err
}

// print writes report, of kind, with the printer -o names; table writes it
// as the plugin's table when -o names none.
func (o *outputFlags) print(w io.Writer, kind string, report any, table func(io.Writer, bool) error) error {
	p, err := o.printer()
	if err != nil {
		return err
	}
	if p == nil {
		return table(w, o.wide())
	}
	obj, err := asObject(kind, report)
	if err != nil {
		return err
	}
	if o.format == outputJSON {
		// As printJSON writes it: the characters encoding/json leaves
		// (C1 controls, bidirectional overrides) escaped too.
		return printJSON(w, obj.Object)
	}
	// YAML refuses some control characters, and templates print strings
	// raw: every string is cleaned first (its unsafe characters written
	// as Go escapes), as in the tables.
	obj.Object = cleanValue(obj.Object).(map[string]any)
	var buf bytes.Buffer
	if err := p.PrintObj(obj, &buf); err != nil {
		return err
	}
	_, err = io.WriteString(w, cleanLines(buf.String()))
	return err
}

// asObject is report as an object of kind for cli-runtime's printers: its
// JSON fields, with apiVersion and kind.
func asObject(kind string, report any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(report)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = reportAPIVersion, kind
	return &unstructured.Unstructured{Object: m}, nil
}

// cleanValue is v, a decoded JSON value, with every string (keys too)
// cleaned.
func cleanValue(v any) any {
	switch v := v.(type) {
	case string:
		return clean(v)
	case []any:
		for i := range v {
			v[i] = cleanValue(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[clean(k)] = cleanValue(e)
		}
		return out
	}
	return v
}

// cleanLines is clean for output whose own lines and columns are made of
// newlines and tabs (YAML, templates): those are kept, every other unsafe
// character escaped. The strings of the report are clean already; this
// catches what a template adds.
func cleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cells := strings.Split(l, "\t")
		for j, c := range cells {
			cells[j] = clean(c)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}
