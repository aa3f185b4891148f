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

package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReviewLimiter(t *testing.T) {
	limits := reviewLimits{Max: 100, Small: 10, SmallBudget: 20, LargeBudget: 100, Wait: 50 * time.Millisecond}
	for _, tc := range []struct {
		name string
		// held are the sizes of requests in flight, each until the case's
		// request was answered, or, with releaseAfter, until then.
		held         []int64
		releaseAfter time.Duration
		wait         time.Duration // the limiter's wait, when not limits.Wait
		size         int64         // -1: no Content-Length
		code         int
	}{
		{name: "small", size: 10, code: http.StatusOK},
		{name: "empty", size: 0, code: http.StatusOK},
		{name: "large", size: 100, code: http.StatusOK},
		{name: "over the limit", size: 101, code: http.StatusRequestEntityTooLarge},
		{name: "no Content-Length", size: -1, code: http.StatusLengthRequired},
		{name: "small budget full", held: []int64{10, 10}, size: 1, code: http.StatusTooManyRequests},
		{name: "small budget nearly full", held: []int64{10, 9}, size: 1, code: http.StatusOK},
		{name: "large budget full", held: []int64{60, 40}, size: 11, code: http.StatusTooManyRequests},
		{name: "large budget full, small not starved", held: []int64{60, 40}, size: 10, code: http.StatusOK},
		{name: "small budget full, large not starved", held: []int64{10, 10}, size: 80, code: http.StatusOK},
		// Room comes 10ms into a wait of 5s: only a scheduler stalled for
		// seconds could miss it (a wait of 50ms was missed 1 run in 20 on
		// a loaded machine).
		{name: "room within the wait", held: []int64{60, 40}, releaseAfter: 10 * time.Millisecond, wait: 5 * time.Second, size: 50, code: http.StatusOK},
		// Room comes only once the request was answered (released at the
		// end of the case), so never within its wait.
		{name: "room after the wait", held: []int64{60, 40}, size: 50, code: http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			var admitted sync.WaitGroup
			limits := limits
			if tc.wait > 0 {
				limits.Wait = tc.wait
			}
			l := limitReviews(limits, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Held") != "" {
					admitted.Done()
					<-release
				}
			}))
			var done sync.WaitGroup
			for _, n := range tc.held {
				admitted.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					req := httptest.NewRequest(http.MethodPost, "/inject", strings.NewReader(strings.Repeat("x", int(n))))
					req.Header.Set("Held", "true")
					l.ServeHTTP(httptest.NewRecorder(), req)
				}()
			}
			admitted.Wait()
			if tc.releaseAfter > 0 {
				time.AfterFunc(tc.releaseAfter, func() { close(release) })
			} else {
				defer close(release)
			}
			req := httptest.NewRequest(http.MethodPost, "/inject", strings.NewReader(strings.Repeat("x", int(max(tc.size, 0)))))
			req.ContentLength = tc.size
			rec := httptest.NewRecorder()
			start := time.Now()
			l.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Errorf("status %d %q, want %d", rec.Code, rec.Body.String(), tc.code)
			}
			if tc.code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") != "1" {
				t.Errorf("429 without Retry-After: 1: %v", rec.Header())
			}
			// A refusal comes when the wait ends: the held requests are
			// released only after this one was answered, so a limiter that
			// waited for room would never answer. How soon after the wait
			// it answers is the scheduler's; seconds later is something else.
			if took := time.Since(start); tc.code != http.StatusOK && took > limits.Wait+2*time.Second {
				t.Errorf("refused after %s, want at the end of the wait %s", took, limits.Wait)
			}
			t.Cleanup(done.Wait)
		})
	}
}

// TestReviewLimiterReleases: a budget is given back when a review ends, so
// more reviews than fit at once all pass one after another.
func TestReviewLimiterReleases(t *testing.T) {
	l := limitReviews(reviewLimits{Max: 100, Small: 10, SmallBudget: 10, LargeBudget: 100, Wait: time.Second},
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Millisecond) }))
	var wg sync.WaitGroup
	codes := make(chan int, 40)
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			l.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/inject", strings.NewReader(strings.Repeat("x", 10))))
			codes <- rec.Code
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("status %d, want every review answered", code)
		}
	}
}
