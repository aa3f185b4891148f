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
