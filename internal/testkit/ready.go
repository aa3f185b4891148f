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
