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
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/certs"
)

// ServerOptions are the server's settings (the command's flags, see
// BindFlags). The zero value of each field means its default; setDefaults
// fills them in.
type ServerOptions struct {
	// ConfigFile is the injection configuration (see Config). Default
	// /etc/meshinit/webhook/config.yaml.
	ConfigFile string
	// Namespace is meshinit's own namespace, never injected. Default
	// $POD_NAMESPACE; required.
	Namespace string
	// Host and Port the webhook listens on over HTTPS. Default all
	// addresses, port 9443.
	Host string
	Port int
	// Path the webhook is served at. Default /inject.
	Path string
	// MetricsAddr serves Prometheus metrics over HTTPS, with the serving
	// certificate, to clients the API server authenticates and
	// authorizes (metricsserver.go); "0" disables. Default :8080.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz over HTTP; "0" disables.
	// Default :8081.
	ProbeAddr string
	// TLSMinVersion is "1.3" (default) or "1.2"; with 1.2, only ECDHE
	// key exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305).
	TLSMinVersion string
	// EnableHTTP2 offers HTTP/2 on the webhook port. Default false: HTTP/2
	// stream multiplexing has been a source of denial-of-service bugs
	// (CVE-2023-44487, CVE-2023-39325) and the API server does not need it.
	// With it, connections held open are not displaced at the server's
	// connection limit (webhookserver.go): HTTP/2 connections do not report
	// when a request is being handled.
	EnableHTTP2 bool
	// ClientCAFile, when set, makes the webhook port require a client
	// certificate that chains to a CA in this PEM file (re-read when it
	// changes): the API server's, configured with an AdmissionConfiguration.
	// Default "": any client may connect.
	ClientCAFile string
	// ClientNames, when set with ClientCAFile, are the subject common names
	// or DNS names a client certificate must have one of. Default: any
	// certificate the CAs signed.
	ClientNames []string
	// ShutdownDelay is how long the server keeps serving after it is told
	// to stop, reporting not ready and closing each connection after its
	// answer, so the API server sends new reviews to other replicas and
	// no review on a connection being closed. Default 5s; negative
	// disables.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds how long in-flight reviews may take to finish
	// once the listener closed. Default 30s.
	ShutdownTimeout time.Duration
	// Certs says where the serving certificate comes from.
	Certs certs.Options
	// Log defaults to controller-runtime's logger.
	Log logr.Logger
}

func (o *ServerOptions) setDefaults() {
	if o.ConfigFile == "" {
		o.ConfigFile = "/etc/meshinit/webhook/config.yaml"
	}
	if o.Namespace == "" {
		o.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if o.Port == 0 {
		o.Port = crwebhook.DefaultPort
	}
	if o.Path == "" {
		o.Path = "/inject"
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.TLSMinVersion == "" {
		o.TLSMinVersion = "1.3"
	}
	if o.ShutdownDelay == 0 {
		o.ShutdownDelay = 5 * time.Second
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.Log.GetSink() == nil {
		o.Log = ctrl.Log.WithName("webhook")
	}
}

// BindFlags registers one flag per option on fs (and the certificate flags
// of certs.Options), with the defaults shown.
func (o *ServerOptions) BindFlags(fs *flag.FlagSet) {
	d := ServerOptions{}
	d.setDefaults()
	fs.StringVar(&o.ConfigFile, "config", d.ConfigFile, "injection configuration file (YAML; mounted from a ConfigMap)")
	fs.StringVar(&o.Namespace, "namespace", d.Namespace, "meshinit's own namespace, never injected (default $POD_NAMESPACE)")
	fs.StringVar(&o.Host, "host", d.Host, "address the webhook listens on (default all)")
	fs.IntVar(&o.Port, "port", d.Port, "HTTPS port of the webhook")
	fs.StringVar(&o.Path, "path", d.Path, "URL path of the webhook")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", d.MetricsAddr, `address of the Prometheus metrics endpoint, HTTPS with authentication ("0" disables)`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", d.ProbeAddr, `address of /healthz and /readyz ("0" disables)`)
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", d.TLSMinVersion, "minimum TLS version: 1.3, or 1.2 (AEAD ciphers only)")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", d.EnableHTTP2, "offer HTTP/2 on the webhook port")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", d.ClientCAFile, "PEM CA bundle client certificates must chain to (empty: no client authentication)")
	fs.Func("client-names", "comma-separated common names or DNS names a client certificate must have one of (with --client-ca-file; default any)",
		func(s string) error { o.ClientNames = strings.Split(s, ","); return nil })
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", d.ShutdownDelay, "how long to keep serving, reporting not ready and closing connections after each answer, after SIGTERM (negative: none)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long in-flight reviews may take to finish at shutdown")
	o.Certs.BindFlags(fs)
}

var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// tls12Ciphers are the TLS 1.2 cipher suites offered with
// --tls-min-version=1.2: forward secret (ECDHE) and authenticated (AEAD)
// only. TLS 1.3's are all of that kind and not configurable.
var tls12Ciphers = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// baseTLS sets what every TLS port shares: the minimum version (and its
// ciphers) and HTTP/1.1 only.
func (o *ServerOptions) baseTLS() (func(*tls.Config), error) {
	min, ok := tlsVersions[o.TLSMinVersion]
	if !ok {
		return nil, fmt.Errorf("--tls-min-version=%q: want 1.3 or 1.2", o.TLSMinVersion)
	}
	return func(c *tls.Config) {
		c.MinVersion = min
		if min < tls.VersionTLS13 {
			c.CipherSuites = tls12Ciphers
		}
		c.NextProtos = []string{"http/1.1"}
	}, nil
}

// tlsOptions are the webhook port's: baseTLS, HTTP/2 when enabled, and
// with ClientCAFile, required and verified client certificates
// (clientauth.go; auth is nil without).
func (o *ServerOptions) tlsOptions() (opts func(*tls.Config), auth *clientAuth, err error) {
	base, err := o.baseTLS()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case o.ClientCAFile != "":
		if auth, err = newClientAuth(o.ClientCAFile, o.ClientNames); err != nil {
			return nil, nil, err
		}
	case len(o.ClientNames) > 0:
		return nil, nil, fmt.Errorf("--client-names=%q needs --client-ca-file", strings.Join(o.ClientNames, ","))
	}
	return func(c *tls.Config) {
		base(c)
		if o.EnableHTTP2 {
			c.NextProtos = []string{"h2", "http/1.1"}
		}
		if auth != nil {
			c.ClientAuth, c.VerifyConnection = tls.RequireAnyClientCert, auth.verify
		}
	}, auth, nil
}

// Serve runs the webhook until ctx ends: it loads the configuration, waits
// for a usable serving certificate, then serves reviews, probes and metrics,
// each port within its bounds (listen.go). When ctx ends it reports not
// ready and closes each connection after its answer for ShutdownDelay,
// then stops accepting connections and lets in-flight reviews finish.
func Serve(ctx context.Context, cfg *rest.Config, o ServerOptions) error {
	o.setDefaults()
	tlsOpts, auth, err := o.tlsOptions()
	if err != nil {
		return err
	}
	baseTLS, err := o.baseTLS()
	if err != nil {
		return err
	}
	if o.Namespace == "" {
		return errors.New("--namespace is required (default: $POD_NAMESPACE)")
	}
	config, err := LoadConfig(o.ConfigFile, o.Namespace)
	if err != nil {
		return err
	}
	o.Certs.Log = o.Log.WithName("certs")
	provider, err := certs.New(cfg, o.Certs)
	if err != nil {
		return err
	}

	server := newWebhookServer(o, tlsOpts, webhookPortLimits)
	if auth != nil {
		server.self = &auth.self
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Logger: o.Log,
		// Metrics and probes are served by bounded servers of our own.
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &o.ShutdownTimeout,
		WebhookServer:           server,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	namespaces, synced, err := namespaceLabels(ctx, mgr)
	if err != nil {
		return err
	}
	hook := &admission.Webhook{Handler: NewHandler(config, namespaces), LogConstructor: requestLogger}
	// GetWebhookServer adds the server to the manager's runnables.
	mgr.GetWebhookServer().Register(o.Path, limitReviews(defaultReviewLimits, hook))
	var stopping atomic.Bool
	ready := map[string]healthz.Checker{
		"certificate": provider.ReadyCheck,
		"webhook":     server.StartedChecker(),
		"namespaces":  synced,
		"shutdown": func(*http.Request) error {
			if stopping.Load() {
				return errors.New("shutting down")
			}
			return nil
		},
	}
	if o.ProbeAddr != "0" {
		probes := &boundedServer{name: "probes", addr: o.ProbeAddr, handler: probeHandler(map[string]healthz.Checker{"ping": healthz.Ping}, ready),
			limits: probePortLimits, shutdownTimeout: o.ShutdownTimeout, log: o.Log}
		if err := mgr.Add(probes); err != nil {
			return err
		}
	}
	if err := mgr.Add(provider); err != nil {
		return err
	}

	o.Log.Info("waiting for the serving certificate", "mode", o.Certs.Mode, "dir", provider.CertDir())
	if err := provider.Setup(ctx); err != nil {
		return err
	}
	watcher, err := certwatcher.New(filepath.Join(provider.CertDir(), "tls.crt"), filepath.Join(provider.CertDir(), "tls.key"))
	if err != nil {
		return err
	}
	if err := mgr.Add(watcher); err != nil {
		return err
	}
	server.certificate = watcher.GetCertificate
	if o.MetricsAddr != "0" {
		handler, err := metricsHandler(cfg, mgr.GetHTTPClient(), o.Log.WithName("metrics"))
		if err != nil {
			return fmt.Errorf("authenticating metrics clients: %w", err)
		}
		metricsTLS := &tls.Config{GetCertificate: watcher.GetCertificate}
		baseTLS(metricsTLS)
		if err := mgr.Add(&boundedServer{name: "metrics", addr: o.MetricsAddr, handler: handler, tls: metricsTLS,
			limits: metricsPortLimits, shutdownTimeout: o.ShutdownTimeout, log: o.Log}); err != nil {
			return err
		}
	}
	// The manager outlives ctx by ShutdownDelay: requests keep being served
	// while readiness reports the shutdown.
	mgrCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-mgrCtx.Done():
			return
		}
		stopping.Store(true)
		// The API server keeps its connections to this replica after it
		// left the Service's endpoints: each is closed after its next
		// answer, so none is closed as a review is sent on it.
		server.port.drain()
		o.Log.Info("shutting down", "delay", o.ShutdownDelay, "connections", server.port.open())
		if o.ShutdownDelay > 0 {
			time.Sleep(o.ShutdownDelay)
		}
		o.Log.Info("stopping", "connections", server.port.open())
		stop()
	}()
	o.Log.Info("serving", "port", o.Port, "path", o.Path, "image", config.Image, "tlsMinVersion", o.TLSMinVersion, "http2", o.EnableHTTP2, "clientCAFile", o.ClientCAFile)
	return mgr.Start(mgrCtx)
}

// namespaceLabels reads namespace labels from a metadata-only cache of all
// namespaces; synced reports whether that cache is filled. A namespace
// newer than the cache is read from the API server.
func namespaceLabels(ctx context.Context, mgr ctrl.Manager) (NamespaceLabels, healthz.Checker, error) {
	newNS := func() *metav1.PartialObjectMetadata {
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		return ns
	}
	informer, err := mgr.GetCache().GetInformer(ctx, newNS())
	if err != nil {
		return nil, nil, fmt.Errorf("watching namespaces: %w", err)
	}
	synced := func(*http.Request) error {
		if !informer.HasSynced() {
			return errors.New("namespace cache not synced yet")
		}
		return nil
	}
	cache, api := mgr.GetCache(), mgr.GetAPIReader()
	lookup := func(ctx context.Context, name string) (map[string]string, error) {
		// Reviews in flight at shutdown must finish, but controller-runtime
		// derives their contexts from the manager's, which ends first.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		ns, key := newNS(), client.ObjectKey{Name: name}
		err := cache.Get(ctx, key, ns)
		if apierrors.IsNotFound(err) {
			err = api.Get(ctx, key, ns)
		}
		return ns.Labels, err
	}
	return lookup, synced, nil
}
