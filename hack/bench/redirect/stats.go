//go:build linux

package main

import (
	"slices"
	"time"
)

// summary is the distribution of one tool's timed runs.
type summary struct {
	median, p90, min, max time.Duration
}

// summarize returns the median (the mean of the middle two for an even
// count), the nearest-rank 90th percentile, the minimum and the maximum.
func summarize(ds []time.Duration) summary {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	rank := (9*n + 9) / 10 // ceil(0.9 n), 1-based
	return summary{median: med, p90: s[rank-1], min: s[0], max: s[n-1]}
}
