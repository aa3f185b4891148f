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
	// How many calls fit in the 100ms is the scheduler's: on a loaded
	// machine the first call's goroutine may not run again before the
	// timeout (TestUntil shows the retries).
	if d := time.Since(start); calls < 1 || d < 100*time.Millisecond {
		t.Errorf("gave up after %d calls in %s, want calls until the timeout of 100ms", calls, d)
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
