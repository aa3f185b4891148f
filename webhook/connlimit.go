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
// longest for a request, if that one has waited at least evictAfter: it is
// still in its TLS handshake or header, or idle between requests. So
// connections held open on purpose, which would keep every slot of a plain
// limit (netutil.LimitListener) and make new ones wait, cost a new one no
// more than evictAfter. A connection whose request is being handled is
// never closed; while all are, the new one waits for one to close.
//
// The server's ConnState must call track; evictAfter 0 never evicts (for
// HTTP/2, whose connections the server does not report as active).
type connLimit struct {
	net.Listener
	max        int
	evictAfter time.Duration
	mu         sync.Mutex
	open       map[*limitedConn]struct{}
	changed    chan struct{} // a connection closed or began waiting
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
	// waiting is when the connection began waiting for a request; zero
	// while one is handled. Guarded by limit.mu.
	waiting time.Time
}

// Accept waits for a connection, then for room for it.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, limit: l, waiting: time.Now()}
	for {
		l.mu.Lock()
		victim, wait := l.room(time.Now())
		if victim != nil || len(l.open) < l.max {
			delete(l.open, victim)
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
// else how long until one may be (an hour when none waits).
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

// track is http.Server.ConnState: it notes when a connection waits for a
// request and when one is handled.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	switch state {
	case http.StateActive:
		lc.waiting = time.Time{}
	case http.StateIdle:
		lc.waiting = time.Now()
	}
	l.mu.Unlock()
	if state == http.StateIdle {
		l.signal()
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
