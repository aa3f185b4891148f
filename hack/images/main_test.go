package main

import (
	"strings"
	"testing"
)

func TestTagSafe(t *testing.T) {
	for in, want := range map[string]string{
		"v0.1.0-3-gabc1234-dirty\n": "v0.1.0-3-gabc1234-dirty",
		"":                          "dev",
		"release/1.0+build":         "release-1.0-build",
		strings.Repeat("a", 200):    strings.Repeat("a", 128),
	} {
		if got := tagSafe(in); got != want {
			t.Errorf("tagSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
