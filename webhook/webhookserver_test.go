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

	"github.com/meshinit/meshinit/certs"
)

// TestWebhookServer runs the webhook port's server with small limits and
// checks each bound: a connection beyond MaxConns displaces the one
// waiting longest once it waited EvictAfter (the server stays ready),
// reviews are answered at their path, a header over MaxHeaderBytes is
// refused (431), a header not finished within ReadHeaderTimeout loses its
// connection, and when the context ends a review in flight still finishes
// before Start returns.
func TestWebhookServer(t *testing.T) {
	limits := serverLimits{MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 2 * time.Second, IdleTimeout: time.Minute, MaxConns: 2, EvictAfter: 500 * time.Millisecond}
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

	s := newWebhookServer(o, dir, tlsOpts, limits)
	inFlight, release := make(chan struct{}), make(chan struct{})
	s.Register("/inject", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Hold") != "" {
			close(inFlight)
			<-release
		}
		_, _ = w.Write([]byte("reviewed"))
	}))
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

	t.Run("at the limit a new connection displaces the one waiting longest", func(t *testing.T) {
		// First: the server keeps a connection it refused (431) open for
		// half a second, as net/http does against resets.
		var held []*tls.Conn
		for range limits.MaxConns {
			conn, err := dial(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			held = append(held, conn)
		}
		if conn, err := dial(limits.EvictAfter / 4); err == nil {
			conn.Close()
			t.Fatalf("a connection beyond the limit of %d was accepted at once", limits.MaxConns)
		}
		if err := s.StartedChecker()(nil); err != nil {
			t.Errorf("not ready while the connections are taken: %v", err)
		}
		conn, err := dial(5 * time.Second)
		if err != nil {
			t.Fatalf("after %s: %v", limits.EvictAfter, err)
		}
		conn.Close()
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
		if took := time.Since(start); !errors.Is(err, io.EOF) || took > limits.ReadHeaderTimeout+time.Second {
			t.Errorf("after %s: %v, want the connection closed after %s", took.Round(time.Millisecond), err, limits.ReadHeaderTimeout)
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
