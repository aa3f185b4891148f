package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
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
	// MetricsAddr serves Prometheus metrics over HTTP; "0" disables.
	// Default :8080.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz over HTTP; "0" disables.
	// Default :8081.
	ProbeAddr string
	// TLSMinVersion is "1.2" (default) or "1.3".
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
	// to stop, reporting not ready, so the API server stops sending reviews
	// before the listener closes. Default 5s; negative disables.
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
		o.TLSMinVersion = "1.2"
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
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", d.MetricsAddr, `address of the Prometheus metrics endpoint ("0" disables)`)
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", d.ProbeAddr, `address of /healthz and /readyz ("0" disables)`)
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", d.TLSMinVersion, "minimum TLS version: 1.2 or 1.3")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", d.EnableHTTP2, "offer HTTP/2 on the webhook port")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", d.ClientCAFile, "PEM CA bundle client certificates must chain to (empty: no client authentication)")
	fs.Func("client-names", "comma-separated common names or DNS names a client certificate must have one of (with --client-ca-file; default any)",
		func(s string) error { o.ClientNames = strings.Split(s, ","); return nil })
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", d.ShutdownDelay, "how long to keep serving, reporting not ready, after SIGTERM (negative: none)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long in-flight reviews may take to finish at shutdown")
	o.Certs.BindFlags(fs)
}

var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// tlsOptions sets the minimum version, unless enabled leaves HTTP/2 out of
// ALPN, and with ClientCAFile requires and verifies client certificates
// (clientauth.go; auth is nil without).
func (o *ServerOptions) tlsOptions() (opts func(*tls.Config), auth *clientAuth, err error) {
	min, ok := tlsVersions[o.TLSMinVersion]
	if !ok {
		return nil, nil, fmt.Errorf("--tls-min-version=%q: want 1.2 or 1.3", o.TLSMinVersion)
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
		c.MinVersion = min
		if !o.EnableHTTP2 {
			c.NextProtos = []string{"http/1.1"}
		}
		if auth != nil {
			c.ClientAuth, c.VerifyConnection = tls.RequireAnyClientCert, auth.verify
		}
	}, auth, nil
}

// Serve runs the webhook until ctx ends: it loads the configuration, waits
// for a usable serving certificate, then serves reviews, probes and metrics.
// When ctx ends it reports not ready for ShutdownDelay, then stops accepting
// connections and lets in-flight reviews finish.
func Serve(ctx context.Context, cfg *rest.Config, o ServerOptions) error {
	o.setDefaults()
	tlsOpts, auth, err := o.tlsOptions()
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

	server := newWebhookServer(o, provider.CertDir(), tlsOpts, defaultServerLimits)
	if auth != nil {
		server.self = &auth.self
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  o.Log,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
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
	for _, c := range []struct {
		name  string
		check healthz.Checker
	}{
		{"certificate", provider.ReadyCheck},
		{"webhook", mgr.GetWebhookServer().StartedChecker()},
		{"namespaces", synced},
		{"shutdown", func(*http.Request) error {
			if stopping.Load() {
				return errors.New("shutting down")
			}
			return nil
		}},
	} {
		if err := mgr.AddReadyzCheck(c.name, c.check); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.Add(provider); err != nil {
		return err
	}

	o.Log.Info("waiting for the serving certificate", "mode", o.Certs.Mode, "dir", provider.CertDir())
	if err := provider.Setup(ctx); err != nil {
		return err
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
		o.Log.Info("shutting down", "delay", o.ShutdownDelay)
		if o.ShutdownDelay > 0 {
			time.Sleep(o.ShutdownDelay)
		}
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
