package webhook

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// reviewLimits bound the memory reviews in flight can hold. Anything that
// reaches the webhook's port can post reviews, and controller-runtime reads
// a whole body (up to 7 MiB) and decodes it into an AdmissionReview that
// holds a copy of the object: a review holds about three times its body
// while it is handled. Budgets count bodies by their Content-Length.
type reviewLimits struct {
	// Max is the largest body accepted; a larger one is refused (413)
	// from its Content-Length, unread.
	Max int64
	// Small is the largest body that draws from SmallBudget; larger ones
	// draw from LargeBudget, so large reviews never starve small ones.
	Small int64
	// SmallBudget and LargeBudget are the bytes of bodies in flight.
	SmallBudget, LargeBudget int64
	// Wait is how long a review waits for room in its budget before it is
	// refused (429, Retry-After: 1).
	Wait time.Duration
	// ReadTimeout bounds the time to read a whole request once admitted,
	// so a slow sender holds a budget no longer.
	ReadTimeout time.Duration
}

// defaultReviewLimits hold a replica's reviews to about three times 16 MiB
// of bodies, far below the chart's 256 Mi limit: TestReplicaUnderLoad
// measures a peak RSS of about 105 MiB (40 MiB when idle) under these
// reviews and a flood of large headers (webhookserver.go) together.
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
	// Room for three of the largest reviews.
	LargeBudget: 12 << 20,
	// Handling a review takes milliseconds; the API server waits at most
	// its timeoutSeconds (10 by default) for the answer.
	Wait:        time.Second,
	ReadTimeout: 10 * time.Second,
}

// reviewLimiter admits requests to next within its limits.
type reviewLimiter struct {
	limits       reviewLimits
	small, large *semaphore.Weighted
	next         http.Handler
}

// limitReviews serves next within l.
func limitReviews(l reviewLimits, next http.Handler) http.Handler {
	return &reviewLimiter{limits: l, small: semaphore.NewWeighted(l.SmallBudget), large: semaphore.NewWeighted(l.LargeBudget), next: next}
}

func (l *reviewLimiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := r.ContentLength
	switch {
	case n < 0:
		http.Error(w, "a review needs a Content-Length", http.StatusLengthRequired)
		return
	case n > l.limits.Max:
		http.Error(w, fmt.Sprintf("review of %d bytes: over the limit of %d", n, l.limits.Max), http.StatusRequestEntityTooLarge)
		return
	}
	budget := l.large
	if n <= l.limits.Small {
		budget = l.small
	}
	ctx, cancel := context.WithTimeout(r.Context(), l.limits.Wait)
	err := budget.Acquire(ctx, n)
	cancel()
	if err != nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many reviews in flight", http.StatusTooManyRequests)
		return
	}
	defer budget.Release(n)
	// Not every ResponseWriter has a connection (tests); then nothing to bound.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(l.limits.ReadTimeout))
	l.next.ServeHTTP(w, r)
}
