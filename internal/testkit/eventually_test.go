package testkit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// fatal records what a test would fail with.
type fatal struct {
	testing.TB
	message string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) { f.message = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, 10*time.Second, "the third call", func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}

	f := &fatal{}
	Eventually(f, 250*time.Millisecond, "never", func() error { return errors.New("not yet") })
	if want := "never: not within 250ms: not yet"; f.message != want {
		t.Errorf("failed with %q, want %q", f.message, want)
	}
}
