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
