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

package main

import (
	"bytes"
	_ "embed"
	"path"
	"strings"
)

// goHeader is the header of a Go file: a block comment, as Kubernetes'
// boilerplate.go.txt.
//
//go:embed boilerplate.go.txt
var goHeader []byte

// kind is how a file carries comments, hence its header.
type kind int

const (
	none  kind = iota // not checked
	goSrc             // a Go file: goHeader
	hash              // a shell script or Makefile: goHeader's text as # lines
)

// kindOf says how the file at path (slash-separated, relative to the
// repository's root) carries its header.
func kindOf(p string) kind {
	if strings.HasPrefix(p, ".ci/") || strings.Contains("/"+p, "/testdata/") {
		return none
	}
	switch {
	case strings.HasSuffix(p, ".go"):
		return goSrc
	case strings.HasSuffix(p, ".sh"), path.Base(p) == "Makefile":
		return hash
	}
	return none
}

// header is the header of a file of kind k.
func header(k kind) []byte {
	if k == goSrc {
		return goHeader
	}
	// The block comment's text, each line behind "# " (an empty line
	// behind "#").
	text := strings.TrimSuffix(strings.TrimPrefix(string(goHeader), "/*\n"), "*/\n")
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			b.WriteString("#\n")
		} else {
			b.WriteString("# " + line + "\n")
		}
	}
	return []byte(b.String())
}

// split returns what must stay before the header (a Go file's build
// constraints with the blank line after them; a script's "#!" line) and
// the rest.
func split(k kind, content []byte) (prefix, rest []byte) {
	i := 0
	for i < len(content) {
		end := bytes.IndexByte(content[i:], '\n')
		if end < 0 {
			end = len(content) - i
		} else {
			end++
		}
		line := string(bytes.TrimSpace(content[i : i+end]))
		keep := false
		switch k {
		case goSrc:
			keep = strings.HasPrefix(line, "//go:build ") || strings.HasPrefix(line, "// +build ") || (line == "" && i > 0)
		case hash:
			keep = i == 0 && strings.HasPrefix(line, "#!")
		}
		if !keep {
			break
		}
		i += end
	}
	return content[:i], content[i:]
}

// hasHeader says whether content, a file of kind k, starts with its header.
func hasHeader(k kind, content []byte) bool {
	_, rest := split(k, content)
	return bytes.HasPrefix(rest, header(k))
}

// withHeader is content with its header added (content itself if it has
// one), followed by a blank line, so that a Go file's package comment
// stays the package's.
func withHeader(k kind, content []byte) []byte {
	if hasHeader(k, content) {
		return content
	}
	prefix, rest := split(k, content)
	var b bytes.Buffer
	b.Write(prefix)
	if k == goSrc && len(prefix) > 0 && !bytes.HasSuffix(prefix, []byte("\n\n")) {
		b.WriteByte('\n') // constraints need a blank line before other comments
	}
	b.Write(header(k))
	b.WriteByte('\n')
	b.Write(bytes.TrimLeft(rest, "\n"))
	return b.Bytes()
}
