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
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

// TestConnLimit serves plain HTTP through a connLimit with small limits
// and checks, connection by connection from several source addresses,
// which connection a new one displaces, if any, and when.
func TestConnLimit(t *testing.T) {
	const stall = 300 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hold := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	})
	serve := func(t *testing.T, limits connLimits) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		limit := newConnLimit(l, "test", limits, testr.New(t))
		srv := &http.Server{Handler: hold, ConnState: limit.track, ConnContext: withConn}
		go func() { _ = srv.Serve(limit) }()
		t.Cleanup(func() { _ = srv.Close() })
		return l.Addr().String()
	}
	limits := func(maxConns, perSource int) connLimits {
		return connLimits{MaxConns: maxConns, MaxPerSource: perSource, EvictAfter: stall, IdleEvictAfter: stall, AcceptWait: 2 * time.Second, MaxPending: 16}
	}
	// dial connects from 127.0.0.<from>.
	dial := func(t *testing.T, addr string, from byte) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// get sends a request for path on c and returns the status line of
	// the answer, or the error after timeout.
	get := func(c net.Conn, path string, timeout time.Duration) (string, error) {
		_ = c.SetDeadline(time.Now().Add(timeout))
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: limit\r\n\r\n", path); err != nil {
			return "", err
		}
		r := bufio.NewReader(c)
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		for l := ""; l != "\r\n"; l, err = r.ReadString('\n') { // the rest of the header
			if err != nil {
				return "", err
			}
		}
		_, err = io.ReadFull(r, make([]byte, 2)) // "ok"
		return strings.TrimSpace(line), err
	}
	// closed says whether the server closed c.
	closed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	}
	// used is a connection that had a request and is idle.
	used := func(t *testing.T, addr string, from byte) net.Conn {
		t.Helper()
		c := dial(t, addr, from)
		if status, err := get(c, "/", time.Second); err != nil {
			t.Fatalf("%s %v", status, err)
		}
		return c
	}
	// served sends a request on a new connection from 127.0.0.<from> and
	// returns how long until it was answered.
	served := func(t *testing.T, addr string, from byte) time.Duration {
		t.Helper()
		start := time.Now()
		if status, err := get(dial(t, addr, from), "/", 5*time.Second); err != nil {
			t.Fatalf("a new connection from 127.0.0.%d: %s %v", from, status, err)
		}
		return time.Since(start)
	}

	t.Run("at its source's limit, a new connection takes no place: it waits for one of its source's to close", func(t *testing.T) {
		addr := serve(t, limits(4, 2))
		own := []net.Conn{dial(t, addr, 2), dial(t, addr, 2)} // send nothing
		other := dial(t, addr, 3)
		time.Sleep(stall)
		answered := make(chan error, 1)
		go func() {
			_, err := get(dial(t, addr, 2), "/", 5*time.Second)
			answered <- err
		}()
		select {
		case err := <-answered:
			t.Fatalf("a connection beyond its source's limit was answered (%v)", err)
		case <-time.After(2 * stall):
		}
		if closed(own[0]) || closed(own[1]) || closed(other) {
			t.Error("a connection was closed for one beyond its source's limit")
		}
		own[0].Close()
		if err := <-answered; err != nil {
			t.Errorf("after one of its source's closed: %v", err)
		}
	})
	t.Run("at the total limit, a new connection waits until one has stalled long enough", func(t *testing.T) {
		addr := serve(t, limits(2, 2))
		dial(t, addr, 2)
		dial(t, addr, 2)
		if took := served(t, addr, 3); took < stall*2/3 {
			t.Errorf("answered after %s, before any connection stalled %s", took, stall)
		}
	})
	t.Run("an idle connection makes room once idle long enough", func(t *testing.T) {
		addr := serve(t, limits(2, 2))
		first := used(t, addr, 2)
		start := time.Now() // the first is idle from about now
		// The server marks a connection idle in its ConnState callback, after
		// the answer is written: on a loaded machine the client can have read
		// it and sent the second request before that runs. A wait keeps the
		// order the test means.
		time.Sleep(stall / 3)
		idle := []net.Conn{first, used(t, addr, 2)}
		served(t, addr, 3)
		if took := time.Since(start); took < stall*2/3 {
			t.Errorf("answered after %s, before an idle connection sat %s", took, stall)
		}
		if !closed(idle[0]) || closed(idle[1]) {
			t.Errorf("closed: the one idle longest %v, the other %v; want only the first", closed(idle[0]), closed(idle[1]))
		}
	})
	t.Run("at the total limit, room comes from the source holding the most, never one holding fewer", func(t *testing.T) {
		addr := serve(t, limits(4, 4))
		many := []net.Conn{dial(t, addr, 2), dial(t, addr, 2), dial(t, addr, 2)}
		time.Sleep(50 * time.Millisecond)
		few := dial(t, addr, 3) // stalled as long, but its source holds less
		time.Sleep(stall)
		served(t, addr, 4)
		if !closed(many[0]) || closed(few) {
			t.Errorf("closed: the biggest source's oldest %v, the smallest source's %v; want only the first", closed(many[0]), closed(few))
		}
		// A source holding one connection (handling a request) cannot
		// displace a stalled one of a source holding as many: it waits,
		// then is closed.
		addr = serve(t, limits(2, 2))
		a, b := dial(t, addr, 2), dial(t, addr, 3)
		go func() { _, _ = get(b, "/hold", 10*time.Second) }()
		time.Sleep(stall)
		if _, err := get(dial(t, addr, 3), "/", 3*time.Second); err == nil {
			t.Error("a connection was served by displacing another source's while its own source held as many")
		}
		if closed(a) {
			t.Error("another source's connection was closed for a source holding as many")
		}
		release <- struct{}{}
	})
	t.Run("connections handling a request are never closed; a new one waits at most AcceptWait", func(t *testing.T) {
		addr := serve(t, connLimits{MaxConns: 2, MaxPerSource: 2, EvictAfter: stall, IdleEvictAfter: stall, AcceptWait: 3 * stall, MaxPending: 16})
		held := make(chan error, 2)
		for range 2 {
			c := dial(t, addr, 2)
			go func() {
				_, err := get(c, "/hold", 10*time.Second)
				held <- err
			}()
		}
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if status, err := get(dial(t, addr, 3), "/", 5*time.Second); err == nil {
			t.Fatalf("a new connection was served (%s) while both were handling a request", status)
		}
		if took := time.Since(start); took < 3*stall*2/3 || took > 3*stall+time.Second {
			t.Errorf("the new connection was closed after %s, want after AcceptWait %s", took, 3*stall)
		}
		for range 2 {
			release <- struct{}{}
			if err := <-held; err != nil {
				t.Errorf("a held request: %v", err)
			}
		}
	})
	t.Run("while a connection waits, one from a source holding more is refused at once", func(t *testing.T) {
		addr := serve(t, connLimits{MaxConns: 3, MaxPerSource: 3, EvictAfter: 5 * time.Second, IdleEvictAfter: 5 * time.Second, AcceptWait: 5 * time.Second, MaxPending: 16})
		a1, a2, b := used(t, addr, 2), used(t, addr, 2), used(t, addr, 3)
		waiting := make(chan error, 1)
		go func() {
			_, err := get(dial(t, addr, 4), "/", 5*time.Second)
			waiting <- err
		}()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if _, err := get(dial(t, addr, 2), "/", 5*time.Second); err == nil || time.Since(start) > time.Second {
			t.Errorf("a connection from the source holding the most: %v after %s, want refused at once", err, time.Since(start))
		}
		b.Close()
		if err := <-waiting; err != nil {
			t.Errorf("the waiting connection, after one closed: %v", err)
		}
		_, _ = a1, a2
	})
	t.Run("EvictAfter 0 never closes one", func(t *testing.T) {
		addr := serve(t, connLimits{MaxConns: 2, MaxPerSource: 2, AcceptWait: 5 * time.Second, MaxPending: 16})
		first := dial(t, addr, 2)
		dial(t, addr, 2)
		answered := make(chan error, 1)
		go func() {
			_, err := get(dial(t, addr, 2), "/", 5*time.Second)
			answered <- err
		}()
		select {
		case err := <-answered:
			t.Fatalf("a new connection was answered (%v) while the others were open", err)
		case <-time.After(2 * stall):
		}
		first.Close()
		if err := <-answered; err != nil {
			t.Errorf("after one closed: %v", err)
		}
	})
}
