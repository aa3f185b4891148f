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

package charts_test

import (
	"strings"
	"testing"

	"github.com/meshinit/meshinit/redirect"
)

// The limits of every list value, annotation or flag: at most maxListBytes
// bytes and maxListEntries entries (commas + 1, counted before empty entries
// are dropped), checked before anything is parsed, in Go (redirect's
// parsers) and in the policy's CEL.
const (
	maxListBytes   = redirect.MaxListBytes
	maxListEntries = redirect.MaxListEntries
)

// overLimits reports whether a list value is refused before parsing.
func overLimits(v string) bool {
	return len(v) > maxListBytes || strings.Count(v, ",")+1 > maxListEntries
}

// TestListLimits: the policy's limits, written once in the chart, are
// redirect's.
func TestListLimits(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	r := request{object: pod("p"), namespace: namespace("team"), params: redirectPolicy(releaseNamespace, "default", costPolicy())}
	var bytes, entries int64
	c.eval(t, r, []string{"variables.maxListBytes", "variables.maxListEntries"}, &bytes, &entries)
	if bytes != maxListBytes || entries != maxListEntries {
		t.Fatalf("the policy's limits are %d bytes and %d entries, redirect's %d and %d", bytes, entries, maxListBytes, maxListEntries)
	}
}

// unreadable returns how the policy's message for a list field it cannot
// read begins, and what it says of the value: over the limits, or, for a
// bad entry, badEntry.
func unreadable(field, value, badEntry string) (prefix, why string) {
	if overLimits(value) {
		return field + " ", " is longer than 4096 bytes or 256 entries"
	}
	return field + " entry ", badEntry
}

// paddedList is a list value of exactly n bytes: port 80 followed by spaces.
func paddedList(n int) string { return "80" + strings.Repeat(" ", n-2) }

// emptyEntries is a list value of n empty entries.
func emptyEntries(n int) string { return strings.Repeat(",", n-1) }
