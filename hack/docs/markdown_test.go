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
	"slices"
	"strings"
	"testing"
)

const sample = "# Title\n" +
	"\n" +
	"```sh\n" +
	"# a comment\n" +
	"make demo   # the demo\n" +
	"helm install a b \\\n" +
	"  --set x=y\n" +
	"```\n" +
	"\n" +
	"## Title\n" +
	"\n" +
	"```console\n" +
	"$ kubectl apply -f - <<EOF\n" +
	"kind: X\n" +
	"EOF\n" +
	"x/y created\n" +
	"$ kubectl get a \\\n" +
	"    -o name\n" +
	"a/one\n" +
	"...\n" +
	"\n" +
	"```\n" +
	"See [the page](docs/x.md#part) and `[not](a link)`.\n" +
	"## Day two: `kubectl meshinit`\n"

func TestBlocks(t *testing.T) {
	blocks := Blocks(sample)
	if len(blocks) != 2 || blocks[0].Lang != "sh" || blocks[0].Line != 3 || blocks[1].Lang != "console" || len(blocks[1].Lines) != 9 {
		t.Fatalf("blocks: %+v", blocks)
	}
	if got := Commands(blocks[0]); !slices.Equal(got, []string{"make demo", "helm install a b --set x=y"}) {
		t.Errorf("commands: %q", got)
	}
	steps, err := Transcript(blocks[1])
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Command: "kubectl apply -f - <<EOF\nkind: X\nEOF", Output: []string{"x/y created"}},
		{Command: "kubectl get a \\\n    -o name", Output: []string{"a/one", "..."}},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps: %+v", steps)
	}
	for i := range want {
		if steps[i].Command != want[i].Command || !slices.Equal(steps[i].Output, want[i].Output) {
			t.Errorf("step %d: %+v, want %+v", i, steps[i], want[i])
		}
	}
}

func TestTranscriptRefusesOutputFirst(t *testing.T) {
	if _, err := Transcript(Block{Lines: []string{"orphan", "$ kubectl get pods"}}); err == nil {
		t.Error("a transcript starting with output was read")
	}
	if _, err := Transcript(Block{Lines: []string{"$ kubectl apply -f - <<EOF", "kind: X"}}); err == nil {
		t.Error("an unclosed here-document was read")
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		want   []string
		output string
		ok     bool
	}{
		{[]string{"a", "b"}, "a\nb\n", true},
		{[]string{"a", "b"}, "a\nc\n", false},
		{[]string{"a"}, "a\nb\n", false},
		{[]string{"a", "...", "d"}, "a\nb\nc\nd", true},
		{[]string{"a", "...", "d"}, "a\nd", true},
		{[]string{"a", "...", "d"}, "a\nb", false},
		{[]string{"time=... msg=x ..."}, "time=2026 msg=x a=b", true},
		{[]string{"time=... msg=x ..."}, "time=2026 msg=y a=b", false},
		{[]string{"port 8080 (...)"}, "port 8080 (x)", true},
		{nil, "\n", true},
		{nil, "something", false},
	} {
		if err := Match(c.want, c.output); (err == nil) != c.ok {
			t.Errorf("Match(%q, %q): %v, want ok %v", c.want, c.output, err, c.ok)
		}
	}
}

func TestLinksAndAnchors(t *testing.T) {
	links := Links(sample)
	if len(links) != 1 || links[0].Target != "docs/x.md#part" || links[0].Line != 23 {
		t.Errorf("links: %+v", links)
	}
	anchors := Anchors(sample)
	for _, a := range []string{"title", "title-1", "day-two-kubectl-meshinit"} {
		if !anchors[a] {
			t.Errorf("no anchor %q in %v", a, anchors)
		}
	}
	if anchors["a-comment"] {
		t.Error("a comment in a code block was taken for a heading")
	}
	if got := Slug("Compared with istio-init and linkerd-init"); got != "compared-with-istio-init-and-linkerd-init" {
		t.Errorf("slug %q", got)
	}
	if got := Slug("Choosing the injector: webhook or policy"); !strings.HasPrefix(got, "choosing-the-injector-webhook-or-policy") {
		t.Errorf("slug %q", got)
	}
}
