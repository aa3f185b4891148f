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
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/meshinit/meshinit/certs"
)

// TestWebhookServer runs the webhook port's server with small limits and
// checks each bound: a connection beyond MaxConns displaces another
// source's waiting longest once it waited EvictAfter (the server stays
// ready),
// reviews are answered at their path, a header over MaxHeaderBytes is
// refused (431), a header not finished within ReadHeaderTimeout loses its
// connection, no request body is read or drained without a deadline (a
// refusal, 404, 411 or 413, closes the connection at once; a 429 is sent
// once the body was read; a body that never comes is cut at ReadTimeout), while draining every answer
// closes its connection, and when the context ends a review in flight
// still finishes before Start returns.
func TestWebhookServer(t *testing.T) {
	limits := listenerLimits{MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 10 * time.Second,
		IdleTimeout: time.Minute, Conns: connLimits{MaxConns: 2, MaxPerSource: 2, EvictAfter: 500 * time.Millisecond, IdleEvictAfter: 500 * time.Millisecond, AcceptWait: 5 * time.Second, MaxPending: 64}}
	dir := t.TempDir()
	ca, err := certs.NewCA("test", time.Hour, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServing(nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := ServerOptions{Host: "127.0.0.1", ShutdownTimeout: 5 * time.Second, Log: testr.New(t)}
	o.setDefaults()
	tlsOpts, _, err := o.tlsOptions()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", o.Port)

	s := newWebhookServer(o, tlsOpts, limits)
	watcher, err := certwatcher.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	s.certificate = watcher.GetCertificate
	inFlight, release := make(chan struct{}), make(chan struct{})
	reviewed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Hold") != "" {
			close(inFlight)
			<-release
		}
		_, _ = w.Write([]byte("reviewed"))
	})
	s.Register("/inject", reviewed)
	// One 16 KiB chunk fills the budget.
	s.Register("/limited", limitReviews(reviewLimits{Max: 64 << 10, Small: 64 << 10, SmallBudget: chunk, LargeBudget: chunk, Wait: 200 * time.Millisecond}, reviewed))
	if err := s.StartedChecker()(nil); err == nil {
		t.Error("started before Start")
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not started: %v", s.StartedChecker()(nil))
		}
		time.Sleep(10 * time.Millisecond)
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	cfg := &tls.Config{RootCAs: roots}
	dial := func(timeout time.Duration) (*tls.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, cfg)
	}
	// send writes a request with header bytes of headers and returns the
	// status line of the answer.
	send := func(t *testing.T, header int) string {
		t.Helper()
		conn, err := dial(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "POST /inject HTTP/1.1\r\nHost: webhook\r\nContent-Length: 0\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", header)); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(line)
	}

	t.Run("at the limit a new connection displaces the one of another source waiting longest", func(t *testing.T) {
		// First: the server keeps a connection it refused (431) open for
		// half a second, as net/http does against resets.
		var held []*tls.Conn
		for range limits.Conns.MaxConns {
			d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
			conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			held = append(held, conn)
		}
		if conn, err := dial(limits.Conns.EvictAfter / 4); err == nil {
			conn.Close()
			t.Fatalf("a connection beyond the limit of %d was accepted at once", limits.Conns.MaxConns)
		}
		if err := s.StartedChecker()(nil); err != nil {
			t.Errorf("not ready while the connections are taken: %v", err)
		}
		start := time.Now()
		conn, err := dial(5 * time.Second)
		if err != nil {
			t.Fatalf("after %s: %v", limits.Conns.EvictAfter, err)
		}
		conn.Close()
		if took := time.Since(start); took > limits.ReadHeaderTimeout/2 {
			t.Errorf("admitted after %s, want after EvictAfter %s", took, limits.Conns.EvictAfter)
		}
		_ = held[0].SetReadDeadline(time.Now().Add(time.Second))
		if _, err := held[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("the connection waiting longest: %v, want closed", err)
		}
	})
	t.Run("header within the limit", func(t *testing.T) {
		if got := send(t, limits.MaxHeaderBytes/2); got != "HTTP/1.1 200 OK" {
			t.Errorf("answered %q, want 200", got)
		}
	})
	t.Run("header over the limit", func(t *testing.T) {
		// Go reads up to 4 KiB past MaxHeaderBytes.
		if got := send(t, limits.MaxHeaderBytes+8<<10); got != "HTTP/1.1 431 Request Header Fields Too Large" {
			t.Errorf("answered %q, want 431", got)
		}
	})
	t.Run("a header not finished in time", func(t *testing.T) {
		conn, err := dial(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, "POST /inject HTTP/1.1\r\nHost: webhook\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(start.Add(limits.ReadHeaderTimeout + 5*time.Second))
		_, err = conn.Read(make([]byte, 1))
		// EOF before the read deadline is the server closing it (a timeout
		// error would be the deadline); how soon after ReadHeaderTimeout it
		// runs is the scheduler's.
		if took := time.Since(start); !errors.Is(err, io.EOF) {
			t.Errorf("after %s: %v, want the connection closed after %s", took.Round(time.Millisecond), err, limits.ReadHeaderTimeout)
		}
	})
	// answered sends request on a new connection and returns the status
	// line of the answer and how long after it the server closed the
	// connection (or the error).
	answered := func(t *testing.T, request string) (string, time.Duration, error) {
		t.Helper()
		conn, err := dial(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(limits.ReadTimeout + 5*time.Second))
		if _, err := io.WriteString(conn, request); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		line, err := r.ReadString('\n')
		if err != nil {
			return "", 0, err
		}
		at := time.Now()
		_, err = io.Copy(io.Discard, r)
		return strings.TrimSpace(line), time.Since(at), err
	}
	t.Run("no body is read without a deadline: a refusal closes the connection at once", func(t *testing.T) {
		// The server closes a connection half a second after its last
		// answer (net/http's guard against resets); draining the 1000
		// bytes announced, which never come, would take ReadTimeout.
		for _, tc := range []struct{ request, status string }{
			{"POST /elsewhere HTTP/1.1\r\nHost: webhook\r\nContent-Length: 1000\r\n\r\n", "HTTP/1.1 404 Not Found"},
			{"POST /limited HTTP/1.1\r\nHost: webhook\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 411 Length Required"},
			{"POST /limited HTTP/1.1\r\nHost: webhook\r\nContent-Length: 100000\r\n\r\n", "HTTP/1.1 413 Request Entity Too Large"},
		} {
			status, closedAfter, err := answered(t, tc.request)
			if status != tc.status || err != nil || closedAfter > limits.ReadTimeout/2 {
				t.Errorf("%q: answered %q, closed %s after (%v); want %q and closed at once", tc.request, status, closedAfter.Round(time.Millisecond), err, tc.status)
			}
		}
		// 429: one request holding the whole budget, its body stalled.
		holder, err := dial(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := fmt.Fprintf(holder, "POST /limited HTTP/1.1\r\nHost: webhook\r\nContent-Length: %d\r\n\r\n%s", chunk, strings.Repeat("{", 100)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		// A review refused for now is read to its end (within ReadTimeout)
		// first, so that its sender reads the 429 and not a reset.
		status, closedAfter, err := answered(t, "POST /limited HTTP/1.1\r\nHost: webhook\r\nConnection: close\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("{", 1000))
		if status != "HTTP/1.1 429 Too Many Requests" || err != nil || closedAfter > limits.ReadTimeout/2 {
			t.Errorf("with the budget taken: answered %q, closed %s after (%v); want 429, then closed as asked", status, closedAfter.Round(time.Millisecond), err)
		}
		// The holder's body never comes: it is cut at ReadTimeout.
		start := time.Now()
		_ = holder.SetReadDeadline(start.Add(limits.ReadTimeout + 5*time.Second))
		_, err = io.Copy(io.Discard, holder)
		if took := time.Since(start); err != nil || took > limits.ReadTimeout+time.Second {
			t.Errorf("a stalled body: closed after %s (%v), want within ReadTimeout %s", took.Round(time.Millisecond), err, limits.ReadTimeout)
		}
	})
	t.Run("while draining, every answer closes its connection", func(t *testing.T) {
		s.port.drain()
		defer s.port.draining.Store(false)
		status, closedAfter, err := answered(t, "POST /inject HTTP/1.1\r\nHost: webhook\r\nContent-Length: 0\r\n\r\n")
		if status != "HTTP/1.1 200 OK" || err != nil || closedAfter > time.Second {
			t.Errorf("answered %q, closed %s after (%v); want 200, then closed", status, closedAfter.Round(time.Millisecond), err)
		}
	})
	t.Run("shutdown lets a review in flight finish", func(t *testing.T) {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		answer := make(chan string, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/inject", nil)
			req.Header.Set("Hold", "true")
			resp, err := client.Do(req)
			if err != nil {
				answer <- err.Error()
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			answer <- string(body)
		}()
		<-inFlight
		stop()
		time.Sleep(100 * time.Millisecond)
		if conn, err := dial(time.Second); err == nil {
			conn.Close()
			t.Error("a new connection was accepted after the context ended")
		}
		close(release)
		if got := <-answer; got != "reviewed" {
			t.Errorf("the review in flight: %q", got)
		}
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}
