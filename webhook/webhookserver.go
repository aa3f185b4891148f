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
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// webhookServer is the webhook port: a crwebhook.Server, as
// controller-runtime's DefaultServer (the same TLS options and webhook
// metrics), served by a boundedServer (listen.go).
type webhookServer struct {
	// routes is a DefaultServer that is never started: it registers the
	// webhooks on its mux with controller-runtime's webhook metrics.
	routes crwebhook.Server
	port   *boundedServer
	// certificate serves the current serving certificate; set before
	// Start (a certwatcher's GetCertificate).
	certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	tlsOpts     func(*tls.Config)
	// self, when set, is the client certificate the readiness check
	// presents (clientauth.go).
	self *tls.Certificate
	// serving is the TLS configuration while the server serves.
	serving atomic.Pointer[tls.Config]
}

var _ crwebhook.Server = &webhookServer{}

// newWebhookServer serves on o's Host and Port within limits.
func newWebhookServer(o ServerOptions, tlsOpts func(*tls.Config), limits listenerLimits) *webhookServer {
	routes := crwebhook.NewServer(crwebhook.Options{Host: o.Host, Port: o.Port, WebhookMux: http.NewServeMux()})
	return &webhookServer{
		routes:  routes,
		tlsOpts: tlsOpts,
		port: &boundedServer{
			name:            "webhook",
			addr:            net.JoinHostPort(o.Host, strconv.Itoa(o.Port)),
			limits:          limits,
			shutdownTimeout: o.ShutdownTimeout,
			log:             o.Log,
		},
	}
}

// NeedLeaderElection is false: every replica serves.
func (*webhookServer) NeedLeaderElection() bool { return false }

// Register serves hook at path; it panics if path is taken.
func (s *webhookServer) Register(path string, hook http.Handler) { s.routes.Register(path, hook) }

// WebhookMux is the mux the webhooks are registered on.
func (s *webhookServer) WebhookMux() *http.ServeMux { return s.routes.WebhookMux() }

// Start serves until ctx ends, then stops accepting connections and lets
// requests in flight finish within the shutdown timeout.
func (s *webhookServer) Start(ctx context.Context) error {
	if s.certificate == nil {
		return errors.New("webhook server: no serving certificate")
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}, GetCertificate: s.certificate} // as controller-runtime; tlsOpts leaves HTTP/2 out unless enabled
	s.tlsOpts(cfg)
	if slices.Contains(cfg.NextProtos, "h2") {
		// An HTTP/2 connection carries many requests at once: it is never
		// closed to make room.
		s.port.limits.Conns.EvictAfter, s.port.limits.Conns.IdleEvictAfter = 0, 0
	}
	s.port.tls = cfg
	s.port.handler = s.WebhookMux() // the mux the webhooks were registered on, once they were
	s.port.listening = func() { s.serving.Store(cfg) }
	defer s.serving.Store(nil)
	return s.port.Start(ctx)
}

// StartedChecker reports ready while the server serves and its TLS
// configuration completes a handshake with the current certificate. The
// handshake is made in process, not through the port: under attack a new
// connection may wait for room, and so would a check through the port;
// that is no reason to take the replica out of its Service.
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
