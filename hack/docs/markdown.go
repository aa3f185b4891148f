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
)

// Block is a fenced code block of a Markdown file.
type Block struct {
	// Lang is the first word of the opening fence's info string: sh,
	// console, yaml, mermaid, or "".
	Lang string
	// Line is the opening fence's line number, from 1.
	Line  int
	Lines []string
}

// Blocks returns the fenced code blocks of a Markdown document in order.
// An unclosed block runs to the end of the document, as GitHub renders it.
func Blocks(src string) []Block {
	var out []Block
	var open *Block
	var fence string
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if open == nil {
			if f := fenceOf(trimmed); f != "" {
				open = &Block{Line: i + 1}
				if info := strings.Fields(strings.TrimPrefix(trimmed, f)); len(info) > 0 {
					open.Lang = info[0]
				}
				fence = f
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			out = append(out, *open)
			open = nil
			continue
		}
		open.Lines = append(open.Lines, line)
	}
	if open != nil {
		out = append(out, *open)
	}
	return out
}

// fenceOf is the fence a line opens (``` or ~~~, or longer), or "".
func fenceOf(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// Commands are the commands of an sh block: whole-line comments dropped,
// a trailing " # comment" cut, lines ending in a backslash joined with the
// next.
func Commands(b Block) []string {
	var out []string
	var cur strings.Builder
	for _, line := range b.Lines {
		if cur.Len() == 0 {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(strings.TrimSpace(rest) + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

// Step is one command of a console transcript and the output shown for it.
type Step struct {
	// Command is what follows "$ ", with its continuation lines (a line
	// ending in a backslash) and its here-document, as a shell reads them.
	Command string
	// Output is the lines shown after it: a pattern for [Match].
	Output []string
}

var heredoc = regexp.MustCompile(`<<-?\s*'?"?([A-Za-z_]+)'?"?`)

// Transcript reads a console block: lines starting with "$ " are commands,
// the lines up to the next command are their output.
func Transcript(b Block) ([]Step, error) {
	var out []Step
	lines := b.Lines
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		cmd, ok := strings.CutPrefix(line, "$ ")
		if !ok {
			if len(out) == 0 {
				if strings.TrimSpace(line) == "" {
					continue
				}
				return nil, fmt.Errorf("line %d: output %q before the first command", b.Line+1+i, line)
			}
			out[len(out)-1].Output = append(out[len(out)-1].Output, line)
			continue
		}
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		if m := heredoc.FindStringSubmatch(cmd); m != nil {
			for {
				if i++; i >= len(lines) {
					return nil, fmt.Errorf("line %d: here-document %s not closed", b.Line, m[1])
				}
				cmd += "\n" + lines[i]
				if strings.TrimSpace(lines[i]) == m[1] {
					break
				}
			}
		}
		out = append(out, Step{Command: cmd})
	}
	for i := range out {
		for len(out[i].Output) > 0 && strings.TrimSpace(out[i].Output[len(out[i].Output)-1]) == "" {
			out[i].Output = out[i].Output[:len(out[i].Output)-1]
		}
	}
	return out, nil
}

// Match checks output against the lines a transcript shows for it. A line
// "..." stands for any number of lines, "..." inside a line for any text;
// every other line must equal a line of the output, in order. Trailing
// spaces and trailing empty lines do not count.
func Match(want []string, output string) error {
	got := strings.Split(strings.TrimRight(output, "\n "), "\n")
	if strings.TrimSpace(output) == "" {
		got = nil
	}
	for i := range got {
		got[i] = strings.TrimRight(got[i], " \t")
	}
	patterns := make([]*regexp.Regexp, len(want))
	for i, w := range want {
		w = strings.TrimRight(w, " \t")
		if strings.TrimSpace(w) == "..." {
			continue
		}
		parts := strings.Split(w, "...")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		patterns[i] = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
	}
	// matches[i][j]: want[i:] matches got[j:].
	matches := make([][]bool, len(want)+1)
	for i := range matches {
		matches[i] = make([]bool, len(got)+1)
	}
	matches[len(want)][len(got)] = true
	for i := len(want) - 1; i >= 0; i-- {
		for j := len(got); j >= 0; j-- {
			if patterns[i] == nil {
				matches[i][j] = matches[i+1][j] || (j < len(got) && matches[i][j+1])
			} else {
				matches[i][j] = j < len(got) && patterns[i].MatchString(got[j]) && matches[i+1][j+1]
			}
		}
	}
	if matches[0][0] {
		return nil
	}
	return fmt.Errorf("the output does not match what the transcript shows\nshown:\n\t%s\noutput:\n\t%s",
		strings.Join(want, "\n\t"), strings.Join(got, "\n\t"))
}
