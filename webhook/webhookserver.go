package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// serverLimits bound what connections to the webhook port hold before a
// request reaches the review limiter (limit.go). controller-runtime's
// webhook server reads request headers of up to 1 MiB, accepts any number
// of connections and has no option to change either: 200 connections each
// sending most of a 1 MiB header, never finished, took a replica past
// 320 MiB (TestReplicaUnderLoad).
type serverLimits struct {
	// MaxHeaderBytes is the largest request header read (Go reads 4 KiB
	// more); a larger one is answered 431 and its connection closed.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the TLS handshake and the reading of each
	// request's header.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxConns is the most connections open at once. At the limit, a new
	// connection takes the place of the one that has waited longest, and
	// at least EvictAfter, for its first request (connlimit.go); while
	// none has, it waits. EvictAfter 0 never closes one.
	MaxConns   int
	EvictAfter time.Duration
}

// defaultServerLimits hold what connections can take to about 35 MiB.
var defaultServerLimits = serverLimits{
	// The API server's review requests carry a handful of short headers
	// (under 1 KiB; a few KiB more with a bearer token from an
	// AdmissionConfiguration). 16 KiB is Node.js's default limit.
	MaxHeaderBytes: 16 << 10,
	// The API server sends the header right after the handshake and waits
	// at most its timeoutSeconds (10 by default) for the whole review.
	ReadHeaderTimeout: 10 * time.Second,
	// As controller-runtime's server: the keep-alive timeout of the API
	// server's client (Go's default transport), so the client closes an
	// idle connection first and never reuses one the server is closing.
	IdleTimeout: 90 * time.Second,
	// 256 connections each holding an unfinished header at the limit add
	// about 33 MiB to a replica's RSS (a TLS connection, its goroutine and
	// buffers, the header read so far, and the garbage collector's room).
	// An API server keeps up to 25 idle connections to a replica
	// (client-go's transport) and opens one more per concurrent review;
	// reviews take milliseconds, so one waiting for a connection waits
	// briefly.
	MaxConns: 256,
	// The API server sends its first request within milliseconds of
	// connecting: at the limit, a connection that sent none in a second
	// is stalled on purpose (or starved of CPU). Without this, 256
	// connections stalled in their handshake or header make every new one
	// wait up to ReadHeaderTimeout (TestReplicaUnderStalledHeaders).
	// Connections idle after a request are left alone; holding the limit
	// with those takes a request each, which with client authentication
	// only the API server can send.
	EvictAfter: time.Second,
}

// webhookServer is the webhook port: a crwebhook.Server, as
// controller-runtime's DefaultServer (the same certificate watcher, TLS
// options and webhook metrics) but with the http.Server and listener
// bounded by limits.
type webhookServer struct {
	// routes is a DefaultServer that is never started: it registers the
	// webhooks on its mux with controller-runtime's webhook metrics.
	routes crwebhook.Server
	host   string
	port   int
	// certDir holds tls.crt and tls.key, watched and reloaded on change.
	certDir string
	tlsOpts func(*tls.Config)
	// self, when set, is the client certificate the readiness check
	// presents (clientauth.go).
	self *tls.Certificate
	// shutdownTimeout bounds how long in-flight requests may take to
	// finish once the listener closed.
	shutdownTimeout time.Duration
	limits          serverLimits
	log             logr.Logger
	// serving is the TLS configuration while the server serves.
	serving atomic.Pointer[tls.Config]
}

var _ crwebhook.Server = &webhookServer{}

// newWebhookServer serves on o's Host and Port, certificates from certDir,
// within limits.
func newWebhookServer(o ServerOptions, certDir string, tlsOpts func(*tls.Config), limits serverLimits) *webhookServer {
	return &webhookServer{
		routes:          crwebhook.NewServer(crwebhook.Options{Host: o.Host, Port: o.Port, WebhookMux: http.NewServeMux()}),
		host:            o.Host,
		port:            o.Port,
		certDir:         certDir,
		tlsOpts:         tlsOpts,
		shutdownTimeout: o.ShutdownTimeout,
		limits:          limits,
		log:             o.Log,
	}
}

// NeedLeaderElection is false: every replica serves.
func (*webhookServer) NeedLeaderElection() bool { return false }

// Register serves hook at path; it panics if path is taken.
func (s *webhookServer) Register(path string, hook http.Handler) { s.routes.Register(path, hook) }

// WebhookMux is the mux the webhooks are registered on.
func (s *webhookServer) WebhookMux() *http.ServeMux { return s.routes.WebhookMux() }

// Start serves until ctx ends, then stops accepting connections and lets
// requests in flight finish within shutdownTimeout.
func (s *webhookServer) Start(ctx context.Context) error {
	cfg := &tls.Config{NextProtos: []string{"h2"}} // as controller-runtime; tlsOpts leaves HTTP/2 out unless enabled
	s.tlsOpts(cfg)
	watcher, err := certwatcher.New(filepath.Join(s.certDir, "tls.crt"), filepath.Join(s.certDir, "tls.key"))
	if err != nil {
		return err
	}
	cfg.GetCertificate = watcher.GetCertificate
	go func() {
		if err := watcher.Start(ctx); err != nil {
			s.log.Error(err, "watching the serving certificate")
		}
	}()
	l, err := net.Listen("tcp", net.JoinHostPort(s.host, strconv.Itoa(s.port)))
	if err != nil {
		return err
	}
	evictAfter := s.limits.EvictAfter
	if slices.Contains(cfg.NextProtos, "h2") {
		evictAfter = 0 // HTTP/2 connections never report a request handled
	}
	limit := newConnLimit(l, s.limits.MaxConns, evictAfter)
	srv := &http.Server{
		Handler:           s.WebhookMux(),
		ConnState:         limit.track,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			s.log.Error(err, "requests still in flight at the shutdown timeout", "timeout", s.shutdownTimeout)
			_ = srv.Close()
		}
	}()
	s.serving.Store(cfg)
	err = srv.Serve(tls.NewListener(limit, cfg))
	s.serving.Store(nil)
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-closed
	return nil
}

// StartedChecker reports ready while the server serves and its TLS
// configuration completes a handshake with the current certificate. The
// handshake is made in process, not through the port: while all MaxConns
// connections are taken, new ones wait, and so would a check through the
// port; that is no reason to take the replica out of its Service.
func (s *webhookServer) StartedChecker() healthz.Checker {
	return func(r *http.Request) error {
		cfg := s.serving.Load()
		if cfg == nil {
			return errors.New("webhook server is not serving")
		}
		ctx := context.Background()
		if r != nil {
			ctx = r.Context()
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return handshake(ctx, cfg, s.self)
	}
}

// handshake completes a TLS handshake with a server of config over a
// pipe, presenting cert if set.
func handshake(ctx context.Context, config *tls.Config, cert *tls.Certificate) error {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	served := make(chan error, 1)
	go func() { served <- tls.Server(server, config).HandshakeContext(ctx) }()
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only whether the server completes a handshake
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	err := tls.Client(client, cfg).HandshakeContext(ctx)
	if err != nil {
		client.Close()
	} else {
		go func() { _, _ = io.Copy(io.Discard, client) }() // what the server still sends (TLS 1.3 session tickets)
	}
	if serr := <-served; serr != nil {
		err = serr // the server's reason, rather than the client's view of it
	}
	if err != nil {
		return fmt.Errorf("webhook server's TLS handshake: %w", err)
	}
	return nil
}
