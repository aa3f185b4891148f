package poll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	calls := 0
	err := Until(context.Background(), time.Millisecond, 10*time.Second, func(context.Context) error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Until = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestUntilTimeout(t *testing.T) {
	calls := 0
	start := time.Now()
	err := Until(context.Background(), 10*time.Millisecond, 100*time.Millisecond, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("cond's context has no deadline")
		}
		calls++
		return fmt.Errorf("call %d", calls)
	})
	if want := fmt.Sprintf("call %d", calls); err == nil || err.Error() != want {
		t.Errorf("Until = %v, want the last error %q", err, want)
	}
	if d := time.Since(start); calls < 2 || d < 100*time.Millisecond {
		t.Errorf("gave up after %d calls in %s, want several calls over 100ms", calls, d)
	}
}

func TestUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := Until(ctx, time.Millisecond, time.Hour, func(context.Context) error {
		calls++
		return errors.New("not yet")
	})
	if err == nil || err.Error() != "not yet" || calls != 1 {
		t.Errorf("Until = %v after %d calls, want the only error after 1 call", err, calls)
	}
}
