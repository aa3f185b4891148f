package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/meshinit/meshinit/internal/poll"
)

// Eventually calls f every 100ms until it returns nil, and fails t with f's
// last error when timeout passes first; what says what the test waits for.
func Eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	if err := poll.Until(context.Background(), 100*time.Millisecond, timeout, func(context.Context) error { return f() }); err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
}
