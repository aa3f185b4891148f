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

package certs

import (
	"context"
	"fmt"
	"net/http"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/poll"
)

// Provider keeps the webhook server's cert dir supplied with a serving
// certificate the way Options.Mode says. Call Setup before starting the
// webhook server (controller-runtime's reads the cert dir when it starts),
// then run the Provider as a manager.Runnable on every replica: it needs no
// leader election.
type Provider struct {
	opts Options
	mode mode
}

// mode is what differs between the Modes.
type mode interface {
	// setup makes one attempt at getting the cert dir usable.
	setup(ctx context.Context) error
	// run keeps it usable until ctx ends.
	run(ctx context.Context) error
}

// New validates opts and returns their Provider. cfg reaches the API server;
// it may be nil in ModeFiles.
func New(cfg *rest.Config, opts Options) (*Provider, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	p := &Provider{opts: opts}
	if opts.Mode == ModeFiles {
		p.mode = files{opts: opts}
		return p, nil
	}
	if cfg == nil {
		return nil, fmt.Errorf("--%s=%s needs access to the API server", flagMode, opts.Mode)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating API client: %w", err)
	}
	switch opts.Mode {
	case ModeSelfManaged:
		p.mode = &selfManaged{opts: opts, client: c, dnsNames: DNSNames(opts.ServiceName, opts.ServiceNamespace)}
	case ModeCertManager:
		p.mode = &certManager{opts: opts, client: c}
	}
	return p, nil
}

// scheme holds the types the Provider reads and writes.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, admissionregistrationv1.AddToScheme, cmapi.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// Setup returns once the cert dir holds a usable certificate, retrying for
// up to StartupTimeout; then it returns the last reason it was not usable.
// From then on ExpiryMetric reports the cert dir's certificates.
func (p *Provider) Setup(ctx context.Context) error {
	expiry.dir.Store(&p.opts.CertDir)
	err := poll.Until(ctx, time.Second, p.opts.StartupTimeout, func(ctx context.Context) error {
		err := p.mode.setup(ctx)
		if err != nil {
			p.opts.Log.V(1).Info("certificates not usable yet", "reason", err.Error())
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("certificates not usable after %s (--%s): %w", p.opts.StartupTimeout, flagStartupTimeout, err)
	}
	return nil
}

// Start keeps the certificates usable until ctx ends (manager.Runnable).
func (p *Provider) Start(ctx context.Context) error { return p.mode.run(ctx) }

// NeedLeaderElection is false: every replica serves, so every replica keeps
// its own cert dir (manager.LeaderElectionRunnable).
func (p *Provider) NeedLeaderElection() bool { return false }

// ReadyCheck fails unless the cert dir serves a currently valid certificate;
// use it with manager.AddReadyzCheck.
func (p *Provider) ReadyCheck(*http.Request) error {
	return checkCertDir(p.opts.CertDir, p.opts.Clock.Now())
}

// CertDir is the directory to serve from (Options.CertDir, defaulted).
func (p *Provider) CertDir() string { return p.opts.CertDir }
