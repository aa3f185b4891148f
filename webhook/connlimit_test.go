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
)

// TestConnLimit serves plain HTTP through a connLimit of two connections
// and checks which connection a new one displaces, if any, and when.
func TestConnLimit(t *testing.T) {
	const evictAfter = 300 * time.Millisecond
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
	serve := func(t *testing.T, evictAfter time.Duration) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		limit := newConnLimit(l, 2, evictAfter)
		srv := &http.Server{Handler: hold, ConnState: limit.track}
		go func() { _ = srv.Serve(limit) }()
		t.Cleanup(func() { _ = srv.Close() })
		return l.Addr().String()
	}
	dial := func(t *testing.T, addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
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
	used := func(t *testing.T, addr string) net.Conn {
		c := dial(t, addr)
		if status, err := get(c, "/", time.Second); err != nil {
			t.Fatalf("%s %v", status, err)
		}
		return c
	}
	// waits sends a request on a new connection, checks that it is not
	// answered within 2*evictAfter, and returns its outcome to come.
	waits := func(t *testing.T, addr string) <-chan error {
		answered := make(chan error, 1)
		go func() {
			_, err := get(dial(t, addr), "/", 5*time.Second)
			answered <- err
		}()
		select {
		case err := <-answered:
			t.Fatalf("a new connection was answered (%v) while the others were open", err)
		case <-time.After(2 * evictAfter):
		}
		return answered
	}

	t.Run("the connection waiting longest for its first request makes room", func(t *testing.T) {
		addr := serve(t, evictAfter)
		first := dial(t, addr) // sends nothing
		time.Sleep(50 * time.Millisecond)
		second := dial(t, addr)
		time.Sleep(evictAfter)
		if status, err := get(dial(t, addr), "/", time.Second); err != nil {
			t.Fatalf("a new connection: %s %v", status, err)
		}
		if !closed(first) {
			t.Error("the connection waiting longest was not closed")
		}
		if closed(second) {
			t.Error("the connection waiting less long was closed")
		}
	})
	t.Run("connections that had a request are never closed", func(t *testing.T) {
		addr := serve(t, evictAfter)
		idle := []net.Conn{used(t, addr), used(t, addr)}
		time.Sleep(evictAfter)
		answered := waits(t, addr)
		for i, c := range idle {
			if closed(c) {
				t.Errorf("idle connection %d was closed", i)
			}
		}
		idle[0].Close()
		if err := <-answered; err != nil {
			t.Errorf("after one closed: %v", err)
		}
	})
	t.Run("a new connection waits until one has waited evictAfter", func(t *testing.T) {
		addr := serve(t, evictAfter)
		start := time.Now()
		dial(t, addr)
		dial(t, addr)
		if status, err := get(dial(t, addr), "/", 5*time.Second); err != nil {
			t.Fatalf("a new connection: %s %v", status, err)
		}
		if took := time.Since(start); took < evictAfter {
			t.Errorf("answered after %s, before any connection waited %s", took, evictAfter)
		}
	})
	t.Run("a connection waits evictAfter from when it got its place", func(t *testing.T) {
		addr := serve(t, evictAfter)
		idle := []net.Conn{used(t, addr), used(t, addr)}
		dial(t, addr) // waits for a place, longer than evictAfter, then sends nothing
		time.Sleep(evictAfter + 100*time.Millisecond)
		idle[0].Close()
		start := time.Now()
		if status, err := get(dial(t, addr), "/", 5*time.Second); err != nil {
			t.Fatalf("a new connection: %s %v", status, err)
		}
		if took := time.Since(start); took < evictAfter*2/3 {
			t.Errorf("answered after %s: the connection before it was closed before it could send a request", took)
		}
	})
	t.Run("connections handling a request are never closed", func(t *testing.T) {
		addr := serve(t, evictAfter)
		held := make(chan error, 2)
		for range 2 {
			c := dial(t, addr)
			go func() {
				_, err := get(c, "/hold", 10*time.Second)
				held <- err
			}()
		}
		time.Sleep(100 * time.Millisecond)
		next := dial(t, addr)
		if status, err := get(next, "/", 3*evictAfter); err == nil {
			t.Fatalf("a new connection was served (%s) while both were handling a request", status)
		}
		release <- struct{}{}
		if err := <-held; err != nil {
			t.Errorf("a held request: %v", err)
		}
		release <- struct{}{}
		if err := <-held; err != nil {
			t.Errorf("a held request: %v", err)
		}
	})
	t.Run("evictAfter 0 never closes one", func(t *testing.T) {
		addr := serve(t, 0)
		first := dial(t, addr)
		dial(t, addr)
		time.Sleep(evictAfter)
		answered := waits(t, addr)
		first.Close()
		if err := <-answered; err != nil {
			t.Errorf("after one closed: %v", err)
		}
	})
}
