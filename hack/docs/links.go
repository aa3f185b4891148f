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
	"regexp"
	"strings"
	"unicode"
)

// Link is a Markdown link's target and the line it is on.
type Link struct {
	Target string
	Line   int
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// Links returns the inline links ([text](target)) of a Markdown document,
// outside code blocks and code spans.
func Links(src string) []Link {
	var out []Link
	for n, line := range prose(src) {
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, Link{Target: m[1], Line: n + 1})
		}
	}
	return out
}

// Anchors returns the fragments a link may name in a Markdown document as
// GitHub renders it: each heading's slug (a repeated one with -1, -2, ...)
// and the ids of <a id="..."> elements.
func Anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(src) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// Slug is the anchor GitHub gives a heading: lower case, letters, digits,
// "-" and "_" kept, spaces made "-", everything else (punctuation, the
// backticks of code) dropped.
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// prose is the document's lines with those of fenced code blocks blanked,
// so line numbers stay right.
func prose(src string) []string {
	lines := strings.Split(src, "\n")
	var fence string
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "":
			if f := fenceOf(trimmed); f != "" {
				fence = f
				lines[i] = ""
			}
		case strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "":
			fence = ""
			lines[i] = ""
		default:
			lines[i] = ""
		}
	}
	return lines
}
