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
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// listenerLimits bound one of a replica's ports against slow, stalled and
// greedy clients: any pod in the cluster can reach all three.
// controller-runtime's servers read headers of up to 1 MiB, accept any
// number of connections and give a request body no deadline (net/http
// then drains up to 256 KiB of an unread body after the handler, with no
// deadline either), and have no options to change that.
type listenerLimits struct {
	// MaxHeaderBytes is the largest request header read (Go reads 4 KiB
	// more); a larger one is answered 431 and its connection closed.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the TLS handshake and each request's header.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds each whole request, header and body, on every
	// path: no body is read or drained without a deadline.
	ReadTimeout time.Duration
	// WriteTimeout bounds each request from the end of its header to the
	// end of its answer.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// Conns bound the connections (connlimit.go).
	Conns connLimits
}

// webhookPortLimits are the webhook port's (9443).
var webhookPortLimits = listenerLimits{
	// The API server's review requests carry a handful of short headers
	// (under 1 KiB; a few KiB more with a bearer token from an
	// AdmissionConfiguration). 16 KiB is Node.js's default limit.
	MaxHeaderBytes: 16 << 10,
	// The API server sends the header right after the handshake and the
	// body with it, and waits at most its timeoutSeconds (10 by default,
	// at most 30) for the answer.
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	// Longer than the keep-alive timeout of the API server's client (Go's
	// default transport: 90 s), so the client closes an idle connection
	// first and never sends a review on one the server is closing.
	IdleTimeout: 120 * time.Second,
	Conns: connLimits{
		// 256 connections each holding an unfinished header at the limit
		// add about 33 MiB to a replica's RSS (a TLS connection, its
		// goroutine and buffers, the header read so far, and the garbage
		// collector's room). An API server keeps up to 25 idle connections
		// to a replica (client-go's transport) and opens one more per
		// concurrent review.
		MaxConns: 256,
		// A quarter: one pod cannot take more, and an API server's load
		// (reviews take milliseconds) stays far below it.
		MaxPerSource: 64,
		// The API server sends its first request, and each body, within
		// milliseconds of connecting: at the limit, a connection that has
		// not in half a second is stalled on purpose (or starved of CPU).
		EvictAfter:     500 * time.Millisecond,
		IdleEvictAfter: 500 * time.Millisecond,
		AcceptWait:     5 * time.Second,
		MaxPending:     64,
	},
}

// metricsPortLimits are the metrics port's (8080): a scraper or two.
var metricsPortLimits = listenerLimits{
	MaxHeaderBytes:    16 << 10, // a bearer token is a few KiB
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       120 * time.Second,
	Conns: connLimits{MaxConns: 32, MaxPerSource: 8, EvictAfter: time.Second, IdleEvictAfter: time.Second,
		AcceptWait: 5 * time.Second, MaxPending: 16},
}

// probePortLimits are the probe port's (8081): the kubelet, which opens a
// connection per probe and waits a second for it (timeoutSeconds).
var probePortLimits = listenerLimits{
	MaxHeaderBytes:    4 << 10,
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       5 * time.Second,
	WriteTimeout:      15 * time.Second, // the readiness check's handshake takes at most 10
	IdleTimeout:       30 * time.Second,
	Conns: connLimits{MaxConns: 32, MaxPerSource: 8, EvictAfter: time.Second, IdleEvictAfter: time.Second,
		AcceptWait: 2 * time.Second, MaxPending: 16},
}

// boundedServer serves one port within its limits until its context ends.
type boundedServer struct {
	name    string // webhook, metrics or probes
	addr    string
	handler http.Handler
	// tls, when set, serves HTTPS.
	tls    *tls.Config
	limits listenerLimits
	// shutdownTimeout bounds how long requests in flight may take to
	// finish once the context ended.
	shutdownTimeout time.Duration
	log             logr.Logger
	// draining: every answer closes its connection (see drain).
	// listening, if set, is called once the port listens.
	listening func()
	draining  atomic.Bool
	conns     atomic.Pointer[connLimit]
}

// NeedLeaderElection is false: every replica serves.
func (*boundedServer) NeedLeaderElection() bool { return false }

// Start listens and serves until ctx ends, then stops accepting
// connections and lets requests in flight finish within shutdownTimeout.
func (s *boundedServer) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	limit := newConnLimit(l, s.name, s.limits.Conns, s.log)
	s.conns.Store(limit)
	if s.listening != nil {
		s.listening()
	}
	srv := &http.Server{
		Handler:           s.answers(s.handler),
		ConnState:         limit.track,
		ConnContext:       withConn,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		ReadTimeout:       s.limits.ReadTimeout,
		WriteTimeout:      s.limits.WriteTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		// Every line is a client's failure (a handshake, a header):
		// under attack, thousands.
		ErrorLog: log.New(logWriter{s.log.V(1).WithValues("listener", s.name)}, "", 0),
	}
	var ln net.Listener = limit
	if s.tls != nil {
		ln = tls.NewListener(limit, s.tls)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			s.log.Error(err, "requests still in flight at the shutdown timeout", "listener", s.name, "timeout", s.shutdownTimeout)
			_ = srv.Close()
		}
	}()
	err = srv.Serve(ln)
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-closed
	return nil
}

// drain makes every answer from now on close its connection, so that a
// client sends no further request on it: closing a kept-alive connection
// races with a client sending its next request on it, which then fails
// (the API server does not retry a review). A stopping replica drains
// before it closes what is left.
func (s *boundedServer) drain() { s.draining.Store(true) }

// open is how many connections are open; 0 before Start.
func (s *boundedServer) open() int {
	if l := s.conns.Load(); l != nil {
		return l.count()
	}
	return 0
}

// answers wraps h: an answer closes its connection while the server
// drains, and when it refuses a request (400 and up) whose body was not
// read to its end, which is then read no further.
func (s *boundedServer) answers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		body := &readToEnd{ReadCloser: r.Body}
		r.Body = body
		h.ServeHTTP(&closingWriter{ResponseWriter: w, r: r, body: body}, r)
	})
}

// readToEnd notes whether a request body was read to its end.
type readToEnd struct {
	io.ReadCloser
	done bool
}

func (b *readToEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done = true
	}
	return n, err
}

// closingWriter closes the connection after a refusal of a request whose
// body was not read to its end.
type closingWriter struct {
	http.ResponseWriter
	r     *http.Request
	body  *readToEnd
	wrote bool
}

func (w *closingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if code >= http.StatusBadRequest && w.r.ContentLength != 0 && !w.body.done {
			// Closing, net/http still reads up to 256 KiB of the body
			// (within ReadTimeout); nothing more is read at all.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now())
		}
		if w.Header().Get("Connection") == "close" {
			if c := connOf(w.r.Context()); c != nil {
				setPhase(c, phaseClosing)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logWriter writes the server's error log lines to a logr.Logger.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
