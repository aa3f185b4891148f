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
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// AwaitReady waits until url, a server's readiness endpoint, answers 200
// OK, for up to timeout; it fails t at once when exited receives first
// (the server, started in a goroutine, returned), with what it returned.
func AwaitReady[T any](t testing.TB, timeout time.Duration, what, url string, exited <-chan T) {
	t.Helper()
	Eventually(t, timeout, what+" ready", func() error {
		select {
		case v := <-exited:
			t.Fatalf("%s returned before it was ready: %v", what, v)
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%s: %s\n%s", url, resp.Status, body)
		}
		return nil
	})
}
