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

package testkit

import "testing"

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\n", "a\nc\n", "line 2:\n- b\n+ c"},
		{"a\n", "a\nextra\n", "line 2:\n- \n+ extra"},
	} {
		if d := firstDifference(tc.want, tc.got); d != tc.diff {
			t.Errorf("firstDifference(%q, %q) = %q, want %q", tc.want, tc.got, d, tc.diff)
		}
	}
}
