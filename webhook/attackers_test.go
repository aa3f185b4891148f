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

package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An attacker is what a tenant's pod can do to a replica's port: keep many
// connections open that each do something slow or useless, from one or
// more source addresses (127.0.0.2 and up; the well-behaved client is
// 127.0.0.1), opening a new one whenever the replica closes one.
// Attackers run in a process of their own (attackersprocess_test.go), so
// their fields are exported, for JSON.
type attacker struct {
	Port    int
	TLS     bool // a TLS handshake first (every port that serves TLS)
	Sources int  // distinct source addresses
	Conns   int  // connections kept open per source
	// Renew closes and reopens each connection after this long; 0 keeps
	// it until the replica closes it.
	Renew time.Duration
	// Act is what each connection does once open.
	Act action
}

// action is what an attacker's connections do once open: Kind names one
// of the functions below, with its arguments.
type action struct {
	Kind string
	Path string
	Size int // a header's size, or the length a body announces
	Sent int // of the body announced, the bytes sent
}

// run does a on c; it returns when the replica closed c (or ctx ended).
func (a action) run(ctx context.Context, c net.Conn) error {
	switch a.Kind {
	case "stalledHeader":
		return stalledHeader(a.Path, a.Size)(ctx, c)
	case "stalledBody":
		return stalledBody(a.Path, a.Size, a.Sent)(ctx, c)
	case "idleKeepAlive":
		return idleKeepAlive(a.Path)(ctx, c)
	case "oversizedHeader":
		return oversizedHeader(a.Path, a.Size)(ctx, c)
	case "silent":
		return silent(ctx, c)
	}
	return fmt.Errorf("no attack %q", a.Kind)
}

// reconnectPause is how long each of an attacker's connections waits
// before it opens again.
const reconnectPause = 100 * time.Millisecond

// attackStats count what happened to an attacker's connections.
type attackStats struct {
	mu       sync.Mutex
	Opened   int
	Outcomes map[string]int
}

func (s *attackStats) note(outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Outcomes == nil {
		s.Outcomes = map[string]int{}
	}
	s.Outcomes[outcome]++
}

func (s *attackStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d connections opened, outcomes %v", s.Opened, s.Outcomes)
}

// run keeps the attacker's connections going until ctx ends.
func (a attacker) run(ctx context.Context, stats *attackStats) {
	var wg sync.WaitGroup
	for src := range a.Sources {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+src))}
		for range a.Conns {
			wg.Go(func() {
				for again := false; ctx.Err() == nil; again = true {
					if again {
						// A pause before the next connection, so that the
						// attacker, which shares the test machine's cores
						// with the replica (a tenant's pod would not), does
						// not measure its own handshakes.
						time.Sleep(reconnectPause)
					}
					outcome := a.once(ctx, local)
					if ctx.Err() == nil {
						stats.note(outcome)
					}
					if !strings.HasPrefix(outcome, "dial: ") {
						stats.mu.Lock()
						stats.Opened++
						stats.mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
}

// once is one connection of the attacker; it returns what became of it.
func (a attacker) once(ctx context.Context, local *net.TCPAddr) string {
	d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", a.Port))
	if err != nil {
		time.Sleep(50 * time.Millisecond) // no busy loop while the port refuses
		return "dial: " + lastPart(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.Renew > 0 {
		time.AfterFunc(a.Renew, cancel)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if a.TLS {
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // an attacker does not care
		if err := tc.HandshakeContext(ctx); err != nil {
			if ctx.Err() != nil {
				return "renewed"
			}
			return "handshake: " + lastPart(err)
		}
		conn = tc
	}
	err = a.Act.run(ctx, conn)
	switch {
	case ctx.Err() != nil:
		return "renewed"
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "closed by the replica"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "renewed"
	default:
		return lastPart(err)
	}
}

// lastPart is the end of an error's message, without addresses.
func lastPart(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// waitClosed reads until the replica closes c; what it sends is dropped.
func waitClosed(c net.Conn) error {
	_, err := io.Copy(io.Discard, c)
	return err
}

// stalledHeader sends the start of a request and header bytes of size,
// never the end of the header.
func stalledHeader(path string, size int) func(context.Context, net.Conn) error {
	return func(_ context.Context, c net.Conn) error {
		if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: webhook\r\nX-Stall: %s", path, strings.Repeat("a", size)); err != nil {
			return err
		}
		return waitClosed(c)
	}
}

// stalledBody sends a whole header announcing a body of length bytes, then
// sent bytes of it, never the rest.
func stalledBody(path string, length, sent int) func(context.Context, net.Conn) error {
	return func(_ context.Context, c net.Conn) error {
		if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			path, length, strings.Repeat("{", sent)); err != nil {
			return err
		}
		return waitClosed(c)
	}
}

// idleKeepAlive sends one complete request, reads its answer, then keeps
// the connection open and silent, as an idle keep-alive connection.
func idleKeepAlive(path string) func(context.Context, net.Conn) error {
	return func(_ context.Context, c net.Conn) error {
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: webhook\r\n\r\n", path); err != nil {
			return err
		}
		return waitClosed(c)
	}
}

// oversizedHeader sends a header of size bytes (beyond any limit), then waits
// for the replica to answer or close; each connection sends one.
func oversizedHeader(path string, size int) func(context.Context, net.Conn) error {
	chunk := bytes.Repeat([]byte("a"), 32<<10)
	return func(_ context.Context, c net.Conn) error {
		_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: webhook\r\nX-Flood: ", path)
		for sent := 0; err == nil && sent < size; sent += len(chunk) {
			_, err = c.Write(chunk[:min(len(chunk), size-sent)])
		}
		if err != nil {
			return err
		}
		return waitClosed(c)
	}
}

// silent opens the connection and sends nothing: a TCP connection in the
// accept queue, or one that never starts its TLS handshake.
func silent(_ context.Context, c net.Conn) error { return waitClosed(c) }
