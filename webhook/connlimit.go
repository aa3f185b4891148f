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
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// connLimits bound the connections of one listener (listen.go).
type connLimits struct {
	// MaxConns is the most connections open at once, MaxPerSource the
	// most from one source address.
	MaxConns, MaxPerSource int
	// EvictAfter is how long a connection may wait for its first request,
	// or for the rest of a request body, before it may be closed to make
	// room; IdleEvictAfter how long one may sit idle between requests.
	// Zero never closes one.
	EvictAfter, IdleEvictAfter time.Duration
	// AcceptWait bounds how long a new connection waits for room; then it
	// is closed. MaxPending bounds how many wait at once.
	AcceptWait time.Duration
	MaxPending int
}

// connLimit is a listener that keeps within its connLimits, whoever
// connects: a tenant's pods can reach every port of a replica.
//
// Connections are counted by source address. A connection has stalled
// when it waited EvictAfter for its first request or for the rest of a
// body, or sat IdleEvictAfter idle; one handling a request never has. At
// MaxConns, a new connection takes the place of the connection that has
// stalled longest of the source holding the most, among the sources
// holding more than its own: never of its own source, nor of one holding
// fewer or as many. A new connection from a source at MaxPerSource takes
// no place; it waits for one of its source's to close. A connection that finds no place waits (at most AcceptWait,
// MaxPending at once, an eighth of them from one source) or is closed at
// once; while connections wait, a new one from a source holding more
// than theirs is closed at once. Accepting goes on meanwhile: a
// connection that waits or is closed holds up no other.
//
// Closing an idle keep-alive connection can race with a client sending
// its next request on it (the request then fails), so idle ones are
// closed only at the limit, from the sources holding the most; a
// well-behaved client, holding few, loses none to another source.
//
// The server's ConnState must call track; its ConnContext should call
// withConn, so that a handler can say when it reads a body (setPhase).
type connLimit struct {
	net.Listener
	limits connLimits
	name   string
	log    logr.Logger

	mu        sync.Mutex
	open      map[*limitedConn]struct{}
	perSource map[string]int
	// pending counts the connections waiting for room, parked their
	// sources: while some wait, a new connection from a source holding
	// more than theirs is refused rather than let take the room first.
	pending int
	parked  map[string]int

	// wake is closed (and replaced) when a connection closes or changes
	// phase while connections wait for room.
	wake     chan struct{}
	ready    chan net.Conn // admitted, for Accept
	failed   chan error    // the listener failed for good
	closed   chan struct{}
	closeErr error
	once     sync.Once
}

// phase is what a connection is doing, for eviction.
type phase int

const (
	phaseNew  phase = iota // admitted; no request yet (TLS handshake, first header)
	phaseIdle              // between requests, or reading a later request's header
	phaseBody              // a handler waits for the request's body
	phaseBusy              // a request is being handled
	// phaseClosing: answered with Connection: close; net/http waits half
	// a second before it closes it (so the client reads the answer before
	// a reset), and it may be closed for room at once.
	phaseClosing
)

// limitedConn is a connection of a connLimit.
type limitedConn struct {
	net.Conn
	limit  *connLimit
	source string
	// phase and since (when it began) are guarded by limit.mu.
	phase   phase
	since   time.Time
	removed bool
}

func newConnLimit(l net.Listener, name string, limits connLimits, log logr.Logger) *connLimit {
	exposeListener(name)
	cl := &connLimit{Listener: l, limits: limits, name: name, log: log,
		open: map[*limitedConn]struct{}{}, perSource: map[string]int{}, parked: map[string]int{},
		wake: make(chan struct{}), ready: make(chan net.Conn, 64), failed: make(chan error, 1), closed: make(chan struct{})}
	go cl.acceptLoop()
	return cl
}

// Accept returns the next admitted connection.
func (l *connLimit) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.failed:
		l.failed <- err
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// acceptLoop accepts connections and admits, parks or closes each.
func (l *connLimit) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case <-l.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				// Out of file descriptors, say: try again, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				l.log.Error(err, "accepting a connection; retrying", "listener", l.name, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			l.failed <- err
			return
		}
		backoff = 0
		l.admit(c)
	}
}

// admit gives c a place, closing another for it if need be, or closes
// it, or parks it in a goroutine of its own to wait for room.
func (l *connLimit) admit(c net.Conn) {
	source := sourceOf(c.RemoteAddr())
	l.mu.Lock()
	victim, v, _ := l.room(source, time.Now(), false)
	if v == verdictWait {
		l.pending++
		l.parked[source]++
		l.mu.Unlock()
		go l.park(c, source)
		return
	}
	l.settle(c, source, victim, v)
}

// park waits for room for c, at most AcceptWait.
func (l *connLimit) park(c net.Conn, source string) {
	deadline := time.Now().Add(l.limits.AcceptWait)
	for {
		l.mu.Lock()
		now := time.Now()
		victim, v, next := l.room(source, now, true)
		if v != verdictWait || !now.Before(deadline) {
			l.unparkLocked(source)
			if v == verdictWait {
				v = verdictRefuse
			}
			l.settle(c, source, victim, v)
			return
		}
		wake := l.wake
		l.mu.Unlock()
		timer := time.NewTimer(min(next, deadline.Sub(now)))
		select {
		case <-wake:
		case <-timer.C:
		case <-l.closed:
			timer.Stop()
			l.mu.Lock()
			l.unparkLocked(source)
			l.mu.Unlock()
			c.Close()
			return
		}
		timer.Stop()
	}
}

// unparkLocked forgets a connection from source that waited. Called with
// l.mu held.
func (l *connLimit) unparkLocked(source string) {
	l.pending--
	if l.parked[source]--; l.parked[source] <= 0 {
		delete(l.parked, source)
	}
}

// settle carries out verdict v for c; it is called with l.mu held and
// releases it.
func (l *connLimit) settle(c net.Conn, source string, victim *limitedConn, v verdict) {
	if v == verdictRefuse {
		l.mu.Unlock()
		connectionsRefused.WithLabelValues(l.name).Inc()
		l.log.V(1).Info("refused a connection", "listener", l.name, "source", source)
		c.Close()
		return
	}
	var was phase
	if victim != nil {
		was = victim.phase
		l.removeLocked(victim)
	}
	lc := l.add(c, source, time.Now())
	l.mu.Unlock()
	if victim != nil {
		connectionsEvicted.WithLabelValues(l.name, was.String()).Inc()
		l.log.V(1).Info("closed a connection for room", "listener", l.name, "source", victim.source, "phase", was.String(), "for", source)
		victim.Conn.Close() // the server's read or write fails and it closes it
	}
	select {
	case l.ready <- lc:
	case <-l.closed:
		lc.Close()
	}
}

// verdicts of room.
type verdict int

const (
	verdictAdmit verdict = iota
	verdictEvict
	verdictRefuse
	verdictWait
)

// room decides about a new connection from source at now (parked: one
// that waited already): admit it, close victim first, refuse it, or wait
// (for at most the duration returned, after which another look may find
// room). Called with l.mu held.
func (l *connLimit) room(source string, now time.Time, parked bool) (*limitedConn, verdict, time.Duration) {
	own := l.perSource[source]
	if own < l.limits.MaxPerSource && len(l.open) < l.limits.MaxConns {
		return nil, verdictAdmit, 0
	}
	if !parked {
		for s := range l.parked {
			if own > l.perSource[s] {
				return nil, verdictRefuse, 0
			}
		}
	}
	// At MaxConns (and below MaxPerSource), room comes from the stalled
	// connections of sources holding more. Otherwise only from a
	// connection closing: displacing a source's own would let it make the
	// replica do handshake after handshake, and its idle ones may be about
	// to carry its next request.
	// A connection already answered and closing makes room at once: the
	// source's own, and at MaxConns anyone's.
	for c := range l.open {
		if c.phase == phaseClosing && (c.source == source || own < l.limits.MaxPerSource) {
			return c, verdictEvict, 0
		}
	}
	next := time.Second
	if own < l.limits.MaxPerSource {
		var v *limitedConn
		v, next = l.stalledLongest(now, func(c *limitedConn) bool { return l.perSource[c.source] > own })
		if v != nil {
			return v, verdictEvict, 0
		}
	}
	if !parked && (l.pending >= l.limits.MaxPending || l.parked[source] >= max(1, l.limits.MaxPending/8)) {
		return nil, verdictRefuse, 0
	}
	return nil, verdictWait, next
}

// stalledLongest is, among the connections eligible says may be closed,
// the one of the source holding the most that has stalled longest, if
// any has stalled long enough; else how long until one may have (at most
// a second: phases change without a timer).
func (l *connLimit) stalledLongest(now time.Time, eligible func(*limitedConn) bool) (*limitedConn, time.Duration) {
	var victim *limitedConn
	next := time.Second
	for c := range l.open {
		after := l.evictAfter(c.phase)
		if after <= 0 || !eligible(c) {
			continue
		}
		if stalled := now.Sub(c.since); stalled < after {
			next = min(next, after-stalled)
			continue
		}
		if victim == nil || l.perSource[c.source] > l.perSource[victim.source] ||
			(l.perSource[c.source] == l.perSource[victim.source] && c.since.Before(victim.since)) {
			victim = c
		}
	}
	return victim, next
}

// evictAfter is how long a connection in phase p must have been so before
// it may be closed; 0: never.
func (l *connLimit) evictAfter(p phase) time.Duration {
	switch p {
	case phaseNew, phaseBody:
		return l.limits.EvictAfter
	case phaseIdle:
		return l.limits.IdleEvictAfter
	}
	return 0
}

// add registers a new connection. Called with l.mu held.
func (l *connLimit) add(c net.Conn, source string, now time.Time) *limitedConn {
	lc := &limitedConn{Conn: c, limit: l, source: source, phase: phaseNew, since: now}
	l.open[lc] = struct{}{}
	l.perSource[source]++
	return lc
}

// removeLocked forgets c. Called with l.mu held.
func (l *connLimit) removeLocked(c *limitedConn) {
	if c.removed {
		return
	}
	c.removed = true
	delete(l.open, c)
	if l.perSource[c.source]--; l.perSource[c.source] <= 0 {
		delete(l.perSource, c.source)
	}
}

// count is how many connections are open.
func (l *connLimit) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// track is http.Server.ConnState: it notes when a connection handles a
// request and when it is idle.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateActive:
		setPhase(c, phaseBusy)
	case http.StateIdle:
		setPhase(c, phaseIdle)
	}
}

// setPhase records that c (a connection of a connLimit, perhaps under
// TLS) entered phase p now.
func setPhase(c net.Conn, p phase) {
	lc := limitedOf(c)
	if lc == nil {
		return
	}
	l := lc.limit
	l.mu.Lock()
	lc.phase, lc.since = p, time.Now()
	l.wakeLocked()
	l.mu.Unlock()
}

func limitedOf(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

// connKey keys the request's connection in its context.
type connKey struct{}

// withConn is http.Server.ConnContext: handlers find their connection
// with connOf.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connOf is the connection of a request's context; nil outside a server
// that sets it (tests).
func connOf(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	return c
}

// wakeLocked wakes the connections waiting for room, if any. Called with
// l.mu held.
func (l *connLimit) wakeLocked() {
	if l.pending > 0 {
		close(l.wake)
		l.wake = make(chan struct{})
	}
}

// Close closes the listener; connections waiting for room are closed.
func (l *connLimit) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

// Close closes the connection and gives its place back.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.limit.mu.Lock()
	c.limit.removeLocked(c)
	c.limit.wakeLocked()
	c.limit.mu.Unlock()
	return err
}

// sourceOf is the source address of a connection: its IP.
func sourceOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

func (p phase) String() string {
	return [...]string{"new", "idle", "body", "busy", "closing"}[p]
}
