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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// reviewLimits bound the memory reviews in flight can hold. Anything that
// reaches the webhook's port can post reviews, and controller-runtime reads
// a whole body and decodes it into an AdmissionReview that holds a copy of
// the object: a review holds about three times its body while it is
// handled. Budgets count the bytes of bodies as they arrive, so a request
// that announces a body and sends none holds nothing.
type reviewLimits struct {
	// Max is the largest body accepted; a larger one is refused (413)
	// from its Content-Length, unread.
	Max int64
	// Small is the largest body (by its Content-Length) that draws from
	// SmallBudget; larger ones draw from LargeBudget, so large reviews
	// never starve small ones.
	Small int64
	// SmallBudget and LargeBudget are the bytes of bodies in flight.
	SmallBudget, LargeBudget int64
	// Wait is how long a review waits for room in its budget before it is
	// refused (429, Retry-After: 1, which the API server's client obeys).
	Wait time.Duration
	// EvictAfter: while a review waits for room, a review whose body has
	// been arriving for this long (the API server sends one at once) is
	// stopped and its connection closed, from the source holding the most
	// of the budget. Zero never stops one.
	EvictAfter time.Duration
}

// defaultReviewLimits hold a replica's reviews to about three times 12 MiB
// of bodies, far below the chart's 256 Mi limit: TestReplicaUnderLoad
// measures the peak RSS under these reviews and a flood of large headers
// (listen.go) together.
var defaultReviewLimits = reviewLimits{
	// The API server refuses a request body over 3 MiB, and a pod is
	// stored in etcd (1.5 MiB by default) as protobuf; a review wraps the
	// pod's JSON in a few KiB. 4 MiB leaves room for the defaults the API
	// server adds and for JSON longer than the protobuf request it came as.
	Max: 4 << 20,
	// A pod's review is a few KiB; 64 KiB is a pod with large annotations.
	Small: 64 << 10,
	// Room for 64 of the largest small reviews, hundreds of usual ones.
	SmallBudget: 4 << 20,
	// Room for two of the largest reviews: pods that large are rare.
	LargeBudget: 8 << 20,
	// Handling a review takes milliseconds; the API server waits at most
	// its timeoutSeconds (10 by default) for the answer.
	Wait: time.Second,
	// Even the largest body arrives in milliseconds on a cluster's network.
	EvictAfter: 500 * time.Millisecond,
}

// chunk is how much of a body is read (and counted) at a time: a TLS
// record's worth.
const chunk = 16 << 10

// reviewLimiter admits requests to next within its limits.
type reviewLimiter struct {
	limits       reviewLimits
	small, large *budget
	next         http.Handler
}

// limitReviews serves next within l.
func limitReviews(l reviewLimits, next http.Handler) http.Handler {
	return &reviewLimiter{limits: l, small: newBudget(l.SmallBudget, l.EvictAfter), large: newBudget(l.LargeBudget, l.EvictAfter), next: next}
}

// ServeHTTP reads the body within the budget, then hands the request, with
// the body in memory, to next. A refusal closes the connection, so the
// server does not read what is left of the body.
func (l *reviewLimiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := r.ContentLength
	switch {
	case n < 0:
		refuseReview(w, http.StatusLengthRequired, "no-length", "a review needs a Content-Length")
		return
	case n > l.limits.Max:
		refuseReview(w, http.StatusRequestEntityTooLarge, "too-large", fmt.Sprintf("review of %d bytes: over the limit of %d", n, l.limits.Max))
		return
	}
	b := l.large
	if n <= l.limits.Small {
		b = l.small
	}
	conn := connOf(r.Context())
	h := &holder{progress: time.Now(), reading: true}
	if conn != nil {
		h.source = sourceOf(conn.RemoteAddr())
		h.evict = func() { _ = conn.Close() }
		// Below TLS, which would write an alert first.
		if lc := limitedOf(conn); lc != nil {
			h.evict = func() { _ = lc.Close() }
		}
	}
	defer b.release(h)
	body, err := l.read(r.Context(), conn, r.Body, n, b, h)
	switch {
	case errors.Is(err, errNoRoom):
		// The API server retries after Retry-After, which it reads only if
		// the connection is not reset under it: the rest of the body is
		// read (and dropped, within the server's ReadTimeout) first.
		b.release(h)
		if conn != nil {
			setPhase(conn, phaseBody)
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			refuseReview(w, http.StatusRequestTimeout, "body", fmt.Sprintf("reading the review: %v", err))
			return
		}
		reviewsRefused.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many reviews in flight", http.StatusTooManyRequests)
		return
	case err != nil && b.wasEvicted(h):
		refuseReview(w, http.StatusRequestTimeout, "evicted", "the review's body stalled while others waited") // on a closed connection
		return
	case err != nil:
		refuseReview(w, http.StatusRequestTimeout, "body", fmt.Sprintf("reading the review: %v", err))
		return
	}
	b.doneReading(h)
	if conn != nil {
		setPhase(conn, phaseBusy)
	}
	r.Body = io.NopCloser(body)
	l.next.ServeHTTP(w, r)
}

// errNoRoom: the budget had no room within the wait.
var errNoRoom = errors.New("no room in the budget")

// read reads n bytes of body, a chunk at a time, each counted in b for h
// before it is read.
// Its connection (nil in tests) counts as stalled only while it waits for
// bytes, not for room.
func (l *reviewLimiter) read(ctx context.Context, conn net.Conn, body io.Reader, n int64, b *budget, h *holder) (io.Reader, error) {
	parts := make([][]byte, 0, n/chunk+1)
	for got := int64(0); got < n; {
		want := min(chunk, n-got)
		if conn != nil {
			setPhase(conn, phaseBusy)
		}
		if !b.acquire(ctx, want, h, l.limits.Wait) {
			return nil, errNoRoom
		}
		if conn != nil {
			setPhase(conn, phaseBody)
		}
		part := make([]byte, want)
		m, err := io.ReadFull(body, part)
		got += int64(m)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				err = fmt.Errorf("the body ended after %d of %d bytes", got, n)
			}
			return nil, err
		}
		b.progressed(h)
		parts = append(parts, part)
	}
	return &chunks{parts: parts}, nil
}

// chunks reads parts in order and lets go of each once read, so the body
// is not held twice while the handler copies it.
type chunks struct{ parts [][]byte }

func (c *chunks) Read(p []byte) (int, error) {
	for len(c.parts) > 0 && len(c.parts[0]) == 0 {
		c.parts[0] = nil
		c.parts = c.parts[1:]
	}
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	return n, nil
}

// refuseReview answers a request refused before the handler, closing its
// connection.
func refuseReview(w http.ResponseWriter, code int, reason, msg string) {
	reviewsRefused.WithLabelValues(reason).Inc()
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// budget is bytes of bodies in flight, taken by holders as their bytes
// arrive.
type budget struct {
	size       int64
	evictAfter time.Duration
	mu         sync.Mutex
	used       int64
	holders    map[*holder]struct{}
	waiting    map[*holder]struct{}
	// freed is closed (and replaced) when bytes are given back.
	freed chan struct{}
}

// holder is one review's share of a budget.
type holder struct {
	source string
	held   int64
	// reading: its body is still arriving; progress: when it began or
	// last brought a chunk; waiting: it waits for room (not for bytes).
	reading  bool
	progress time.Time
	waiting  bool
	evict    func()
	evicted  bool
}

func newBudget(size int64, evictAfter time.Duration) *budget {
	return &budget{size: size, evictAfter: evictAfter, holders: map[*holder]struct{}{}, waiting: map[*holder]struct{}{}, freed: make(chan struct{})}
}

// acquire takes n bytes for h, waiting at most wait for room. Room goes
// first to the reviews of the sources holding the least; meanwhile, it
// stops the review whose body has stalled longest (see victim).
func (b *budget) acquire(ctx context.Context, n int64, h *holder, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	b.mu.Lock()
	b.waiting[h] = struct{}{}
	h.waiting = true
	defer func() {
		b.mu.Lock()
		delete(b.waiting, h)
		h.waiting = false
		b.notifyLocked() // a waiter it held back may go now
		b.mu.Unlock()
	}()
	for {
		held := b.bySource()
		if b.used+n <= b.size && !b.smallerWaits(h, held) {
			b.used += n
			h.held += n
			h.progress = time.Now() // it waited for room, not for bytes
			b.holders[h] = struct{}{}
			b.mu.Unlock()
			return true
		}
		now := time.Now()
		v, next := b.victim(h, held, now)
		if v != nil {
			v.evicted = true
		}
		freed := b.freed
		b.mu.Unlock()
		if v != nil {
			v.evict() // it gives its bytes back when its read fails
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return false
		}
		timer := time.NewTimer(min(left, next))
		select {
		case <-freed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return false
		}
		timer.Stop()
		b.mu.Lock()
	}
}

// bySource is the bytes each source holds. Called with b.mu held.
func (b *budget) bySource() map[string]int64 {
	held := map[string]int64{}
	for o := range b.holders {
		held[o.source] += o.held
	}
	return held
}

// smallerWaits reports whether a review of a source holding less than
// h's waits for room. Called with b.mu held.
func (b *budget) smallerWaits(h *holder, held map[string]int64) bool {
	for w := range b.waiting {
		if w != h && held[w.source] < held[h.source] {
			return true
		}
	}
	return false
}

// victim is the review to stop so that h finds room: one whose body has
// brought no bytes for evictAfter (not one waiting for room), from the
// source holding the most of the budget (and more than h's: never of h's
// own source), the longest stalled first; else how long until one may be. Called with
// b.mu held.
func (b *budget) victim(h *holder, bySource map[string]int64, now time.Time) (*holder, time.Duration) {
	next := b.evictAfter
	if b.evictAfter <= 0 {
		return nil, time.Second
	}
	var v *holder
	for o := range b.holders {
		if o == h || !o.reading || o.waiting || o.evict == nil || o.evicted || bySource[o.source] <= bySource[h.source] {
			continue
		}
		if stalled := now.Sub(o.progress); stalled < b.evictAfter {
			next = min(next, b.evictAfter-stalled)
			continue
		}
		if v == nil || bySource[o.source] > bySource[v.source] || (bySource[o.source] == bySource[v.source] && o.progress.Before(v.progress)) {
			v = o
		}
	}
	return v, next
}

// progressed notes that a chunk of h's body arrived.
func (b *budget) progressed(h *holder) {
	b.mu.Lock()
	h.progress = time.Now()
	b.mu.Unlock()
}

// doneReading marks h's body as read: it is no longer stopped for room.
func (b *budget) doneReading(h *holder) {
	b.mu.Lock()
	h.reading = false
	b.mu.Unlock()
}

func (b *budget) wasEvicted(h *holder) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return h.evicted
}

// release gives back everything h holds.
func (b *budget) release(h *holder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.holders[h]; !ok {
		return
	}
	delete(b.holders, h)
	b.used -= h.held
	h.held = 0
	b.notifyLocked()
}

// notifyLocked wakes the reviews waiting for room. Called with b.mu held.
func (b *budget) notifyLocked() {
	close(b.freed)
	b.freed = make(chan struct{})
}
