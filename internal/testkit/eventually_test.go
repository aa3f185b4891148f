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
