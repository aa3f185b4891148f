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
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/images"
)

// TestREADMECommands checks every command README.md gives, so that the
// README cannot drift from what the commands do:
//
//   - make: a dry run (make -n) of the Makefile must know the target, and
//     show each VAR=value given in the commands it would run;
//   - helm install/upgrade: the chart renders, values schema included,
//     with the command's release, namespace and --set values; the released
//     chart's --version is Chart.yaml's; an install from source, after
//     `make images PUSH=<prefix>`, pulls every image from that prefix;
//     helm test and uninstall name a release installed above;
//   - console transcripts: only kubectl, whose commands and output e2e's
//     TestDemo runs and compares on the demo's cluster (e2e/readme_test.go);
//     an image they name is one `make images` builds, at the chart's
//     appVersion;
//   - the test command is the one .ci/run runs;
//   - an inline `make ...` is checked as above; an inline `kubectl ...` or
//     `helm ...` must begin a command of a block.
//
// A command of another kind fails the test: teach it how to check that
// kind, or show the command in a console block.
func TestREADMECommands(t *testing.T) {
	readme := readFile(t, "README.md")
	chart := chartMeta(t)
	r := readmeCommands{t: t, chart: chart}
	var shown []string
	for _, b := range Blocks(readme) {
		switch b.Lang {
		case "sh":
			for _, cmd := range Commands(b) {
				shown = append(shown, cmd)
				r.check(cmd)
			}
		case "console":
			steps, err := Transcript(b)
			if err != nil {
				t.Errorf("README.md: %v", err)
			}
			for _, s := range steps {
				shown = append(shown, s.Command)
				r.transcript(s.Command)
			}
		case "yaml", "mermaid", "text":
		default:
			t.Errorf("README.md line %d: a code block of language %q: say sh (commands checked here), console (a transcript e2e runs), yaml, mermaid or text", b.Line, b.Lang)
		}
	}
	r.finish()

	for _, span := range inlineCode(readme) {
		switch first := strings.Fields(span + " ")[0]; {
		case first == "make":
			r.make(span, words(t, span)[1:])
		case first == "kubectl" || first == "helm":
			if !slices.ContainsFunc(shown, func(cmd string) bool { return cmd == span || strings.HasPrefix(cmd, span+" ") }) {
				t.Errorf("README.md: inline command `%s` begins no command of a code block, so no test runs it", span)
			}
		}
	}

	ci := readFile(t, ".ci/run")
	if !slices.Contains(shown, testCommand) {
		t.Errorf("README.md gives no %q in an sh block: it is the command that proves the project", testCommand)
	}
	if !slices.Contains(strings.Split(ci, "\n"), testCommand) {
		t.Errorf(".ci/run does not run %q, the test command README.md gives", testCommand)
	}
}

// testCommand is the command README.md gives for the tests and .ci/run runs.
const testCommand = "make test"

// readmeCommands checks README.md's commands, one by one, and what they
// say together.
type readmeCommands struct {
	t     *testing.T
	chart chartYAML
	// push is the registry prefix of `make images PUSH=...`, "" without one.
	push string
	// installed are the releases helm installs, as "release -n namespace".
	installed []string
	// later are checks that need every command read first.
	later []func()
}

func (r *readmeCommands) check(cmd string) {
	args := words(r.t, cmd)
	switch args[0] {
	case "make":
		r.make(cmd, args[1:])
	case "helm":
		r.helm(cmd, args[1:])
	default:
		r.t.Errorf("README.md command %q: no test checks a %s command; show it in a console block (e2e's TestDemo runs those) or teach TestREADMECommands to check it", cmd, args[0])
	}
}

// make dry-runs the Makefile with the command's targets and variables.
func (r *readmeCommands) make(cmd string, args []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "make", append([]string{"-n", "-C", root}, args...)...).CombinedOutput()
	if err != nil {
		r.t.Errorf("README.md command %q: make -n: %v\n%s", cmd, err, out)
		return
	}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			continue
		}
		if !strings.Contains(string(out), value) {
			r.t.Errorf("README.md command %q: the Makefile does not use %s=%s (make -n shows no %q):\n%s", cmd, name, value, value, out)
		}
		if name == "PUSH" {
			r.push = value
		}
	}
}

// helm checks a helm command against the chart.
func (r *readmeCommands) helm(cmd string, args []string) {
	fail := func(format string, a ...any) {
		r.t.Errorf("README.md command %q: "+format, append([]any{cmd}, a...)...)
	}
	if len(args) == 0 {
		fail("no helm subcommand")
		return
	}
	sub := args[0]
	var positional, sets []string
	namespace, version := "default", ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		value := func() string {
			if i+1 >= len(args) {
				fail("%s needs a value", a)
				return ""
			}
			i++
			return args[i]
		}
		switch {
		case a == "-n" || a == "--namespace":
			namespace = value()
		case a == "--set":
			sets = append(sets, value())
		case a == "--version":
			version = value()
		case a == "--create-namespace" || a == "--wait" || a == "--install":
		case strings.HasPrefix(a, "-"):
			fail("helm flag %s is not checked by TestREADMECommands", a)
		default:
			positional = append(positional, a)
		}
	}
	switch sub {
	case "install", "upgrade":
		if len(positional) != 2 {
			fail("want a release and a chart, got %q", positional)
			return
		}
		release, ref := positional[0], positional[1]
		switch {
		case ref == "charts/meshinit":
			if version != "" {
				fail("--version with the chart's directory")
			}
		case strings.HasPrefix(ref, "oci://") && strings.HasSuffix(ref, "/"+r.chart.Name):
			if version != r.chart.Version {
				fail("--version %q, but Chart.yaml's version is %q", version, r.chart.Version)
			}
		default:
			fail("chart %q is neither charts/meshinit nor an oci:// reference to chart %s", ref, r.chart.Name)
			return
		}
		values := map[string]any{}
		for _, s := range sets {
			if err := strvals.ParseInto(s, values); err != nil {
				fail("--set %s: %v", s, err)
			}
		}
		manifests, err := charts.Render(charts.Options{ReleaseName: release, Namespace: namespace, Values: values})
		if err != nil {
			fail("the chart does not render with these values: %v", err)
			return
		}
		r.installed = append(r.installed, release+" -n "+namespace)
		if ref == "charts/meshinit" {
			r.later = append(r.later, func() { r.fromSource(cmd, manifests) })
		}
	case "test", "uninstall":
		if len(positional) != 1 || !slices.Contains(r.installed, positional[0]+" -n "+namespace) {
			fail("names no release a helm install above it installs (%q)", r.installed)
		}
	default:
		fail("helm %s is not checked by TestREADMECommands", sub)
	}
}

// fromSource: an install from the chart's directory, after `make images
// PUSH=<prefix>`, pulls every image from there, none from the registry
// the released images will be in.
func (r *readmeCommands) fromSource(cmd string, manifests map[string]string) {
	if r.push == "" {
		r.t.Errorf("README.md command %q installs from source, but no `make images PUSH=<prefix>` before it pushes the images", cmd)
		return
	}
	for path, m := range manifests {
		if strings.Contains(m, images.Registry+"/") {
			r.t.Errorf("README.md command %q: %s still names %s/ images; set every image's repository under %s",
				cmd, path, images.Registry, r.push)
		}
	}
}

var imageRef = regexp.MustCompile(regexp.QuoteMeta(images.Registry) + `/[^\s:]+(:\S+)?`)

// transcript checks a console transcript's command: kubectl only (e2e runs
// them), and images that `make images` builds at the chart's appVersion.
func (r *readmeCommands) transcript(cmd string) {
	if !strings.HasPrefix(cmd, "kubectl ") {
		r.t.Errorf("README.md console command %q: e2e's TestDemo runs only kubectl commands; show others in an sh block", cmd)
	}
	for _, ref := range imageRef.FindAllString(cmd, -1) {
		ok := false
		for _, name := range images.Names() {
			ok = ok || ref == images.Ref(name, r.chart.AppVersion)
		}
		if !ok {
			r.t.Errorf("README.md console command %q: image %s is not one `make images` builds at the chart's appVersion %s", cmd, ref, r.chart.AppVersion)
		}
	}
}

func (r *readmeCommands) finish() {
	for _, f := range r.later {
		f()
	}
}

// chartYAML is what the commands need of Chart.yaml.
type chartYAML struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func chartMeta(t *testing.T) chartYAML {
	var c chartYAML
	if err := yaml.Unmarshal([]byte(readFile(t, "charts/meshinit/Chart.yaml")), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inlineCode is the code spans of a document's prose.
func inlineCode(src string) []string {
	var out []string
	for _, line := range prose(src) {
		for _, m := range codeSpan.FindAllString(line, -1) {
			out = append(out, strings.Trim(m, "`"))
		}
	}
	return out
}

// words splits a command as a shell would: by spaces, outside quotes.
func words(t *testing.T, cmd string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, c := range cmd {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		t.Errorf("command %q: unclosed quote", cmd)
	}
	if inWord {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		t.Fatalf("an empty command")
	}
	return out
}

// readmeMaxLines keeps README.md a front door a reader gets through in
// minutes; the rest belongs in docs/.
const readmeMaxLines = 150

func TestREADMEIsShort(t *testing.T) {
	if n := strings.Count(readFile(t, "README.md"), "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, the most is %d: move detail to a page of docs/", n, readmeMaxLines-1)
	}
}
