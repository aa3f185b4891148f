package webhook

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimit is a listener that keeps at most max connections open. At the
// limit, a new connection takes the place of the one that has waited
// longest, and at least evictAfter, for its first request: one still in
// its TLS handshake or first header. So connections stalled on purpose,
// which would keep every place of a plain limit (netutil.LimitListener)
// until the header timeout, cost a new connection no more than
// evictAfter. A connection that has had a request, handled or idle since,
// is never closed: a client may be sending its next request on an idle
// connection as the server closes it, and would see that request fail.
// While no connection can be closed, the new one waits for one to close.
//
// The server's ConnState must call track; evictAfter 0 never evicts (for
// HTTP/2, whose connections the server does not report as active).
type connLimit struct {
	net.Listener
	max        int
	evictAfter time.Duration
	mu         sync.Mutex
	open       map[*limitedConn]struct{}
	changed    chan struct{} // a connection closed
	closed     chan struct{}
	closeOnce  sync.Once
}

func newConnLimit(l net.Listener, maxConns int, evictAfter time.Duration) *connLimit {
	return &connLimit{Listener: l, max: maxConns, evictAfter: evictAfter, open: map[*limitedConn]struct{}{},
		changed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// limitedConn is a connection of a connLimit.
type limitedConn struct {
	net.Conn
	limit *connLimit
	// waiting is when the connection was admitted, until its first
	// request; then zero. Guarded by limit.mu.
	waiting time.Time
}

// Accept waits for a connection, then for room for it.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, limit: l}
	for {
		l.mu.Lock()
		now := time.Now()
		victim, wait := l.room(now)
		if victim != nil || len(l.open) < l.max {
			delete(l.open, victim)
			lc.waiting = now // from here: the server reads it only once admitted
			l.open[lc] = struct{}{}
			l.mu.Unlock()
			if victim != nil {
				victim.Conn.Close() // the server sees it fail and closes it
			}
			return lc, nil
		}
		l.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-l.changed:
		case <-timer.C:
		case <-l.closed:
			timer.Stop()
			c.Close()
			return nil, net.ErrClosed
		}
		timer.Stop()
	}
}

// room returns, when all max connections are open, the one to evict, or
// else how long until one may be (an hour when none waits for its first
// request).
func (l *connLimit) room(now time.Time) (victim *limitedConn, wait time.Duration) {
	wait = time.Hour
	if len(l.open) < l.max || l.evictAfter <= 0 {
		return nil, wait
	}
	for c := range l.open {
		if !c.waiting.IsZero() && (victim == nil || c.waiting.Before(victim.waiting)) {
			victim = c
		}
	}
	if victim == nil {
		return nil, wait
	}
	if waited := now.Sub(victim.waiting); waited < l.evictAfter {
		return nil, l.evictAfter - waited
	}
	return victim, 0
}

// track is http.Server.ConnState: it notes a connection's first request.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	if state != http.StateActive {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitedConn); ok {
		l.mu.Lock()
		lc.waiting = time.Time{}
		l.mu.Unlock()
	}
}

func (l *connLimit) signal() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// Close closes the listener; an Accept waiting for room returns.
func (l *connLimit) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Close closes the connection and gives its place back.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.limit.mu.Lock()
	delete(c.limit.open, c)
	c.limit.mu.Unlock()
	c.limit.signal()
	return err
}
