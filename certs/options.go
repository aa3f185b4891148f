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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Mode says where the webhook's serving certificate comes from.
type Mode string

const (
	// ModeSelfManaged: meshinit issues a CA and a serving certificate itself,
	// keeps them in one Secret shared by all replicas, writes the CA into the
	// MutatingWebhookConfiguration's caBundle and renews both while serving.
	ModeSelfManaged Mode = "self-managed"
	// ModeCertManager: cert-manager issues the serving certificate (the
	// chart's Certificate, mounted as the cert dir) and its cainjector writes
	// the caBundle. meshinit only checks at startup that it is ready.
	ModeCertManager Mode = "cert-manager"
	// ModeFiles: tls.crt and tls.key are provided in the cert dir by someone
	// else (a mounted Secret, a file); meshinit only waits for them.
	ModeFiles Mode = "files"
)

// Options configure a Provider. Zero values mean the defaults stated on each
// field; setDefaults fills them in.
type Options struct {
	// Mode defaults to ModeSelfManaged.
	Mode Mode

	// CertDir is the directory holding tls.crt and tls.key (and ca.crt in
	// self-managed mode). Defaults to controller-runtime's webhook server
	// default, <os.TempDir()>/k8s-webhook-server/serving-certs.
	CertDir string

	// SecretName is the Secret holding the serving certificate: in
	// self-managed mode the one all replicas share (with a copy of the CA
	// certificates, not the CA key: see CASecretName), in cert-manager mode
	// the Certificate's spec.secretName. Required in both; unused in files
	// mode. Self-managed mode only reads and updates it: it must exist.
	SecretName string

	// CASecretName is self-managed mode's Secret of the CA: its key and
	// the CA certificates to trust. Required there; it must exist.
	CASecretName string

	// LegacySecretName, in self-managed mode, is the one Secret a release
	// from before CASecretName kept everything in: while the two Secrets
	// are empty, its certificates are moved into them, and it is deleted.
	// Default "": none.
	LegacySecretName string

	// ServiceName and ServiceNamespace name the webhook's Service; the
	// serving certificate is valid for its DNS names (see DNSNames). The
	// Secret and the Certificate live in ServiceNamespace. Both required in
	// self-managed mode; ServiceNamespace also in cert-manager mode.
	ServiceName, ServiceNamespace string

	// WebhookConfigName is the MutatingWebhookConfiguration whose caBundle
	// self-managed mode keeps, on every webhook entry. Empty means nobody's
	// caBundle is written (and a new CA is assumed trusted at once).
	WebhookConfigName string

	// CertificateName is cert-manager's Certificate (cert-manager mode only,
	// required there).
	CertificateName string

	// CAValidity is the self-managed CA's lifetime; it is replaced at 2/3 of
	// it. Default 2 years (17520h).
	CAValidity time.Duration

	// ServingValidity is the self-managed serving certificate's lifetime
	// (never beyond its CA's); it is renewed at 2/3 of it. Default 90 days
	// (2160h). At most CAValidity.
	ServingValidity time.Duration

	// PropagationDelay is how long a new CA sits in the caBundle, next to the
	// old one, before it signs the serving certificate, so every API server
	// trusts it before it is served. Counted from the new CA's NotBefore,
	// when it was issued. A replica also keeps serving its certificate until
	// the CA of the Secret's has been in the caBundle that long (when the
	// Secret was deleted or replaced), and CAs the Secret no longer holds
	// leave the caBundle 2*PropagationDelay+ResyncPeriod after that. Default
	// 5m.
	// Less than a third of min(ServingValidity, CAValidity/3).
	PropagationDelay time.Duration

	// ResyncPeriod is how often self-managed mode re-reads the Secret and
	// re-asserts the caBundle without being told of a change (it also
	// watches both). Default 1m.
	ResyncPeriod time.Duration

	// StartupTimeout bounds Setup: how long it retries before giving up with
	// the last error. Default 2m.
	StartupTimeout time.Duration

	// Clock tells the time renewal decisions are made at. Default the real
	// clock.
	Clock clock.PassiveClock

	// Log defaults to controller-runtime's logger named "certs".
	Log logr.Logger
}

const (
	defaultCAValidity       = 2 * 365 * 24 * time.Hour
	defaultServingValidity  = 90 * 24 * time.Hour
	defaultPropagationDelay = 5 * time.Minute
	defaultResyncPeriod     = time.Minute
	defaultStartupTimeout   = 2 * time.Minute
)

// setDefaults fills in every unset field: the one place defaults live.
func (o *Options) setDefaults() {
	if o.Mode == "" {
		o.Mode = ModeSelfManaged
	}
	if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if o.CAValidity == 0 {
		o.CAValidity = defaultCAValidity
	}
	if o.ServingValidity == 0 {
		o.ServingValidity = defaultServingValidity
	}
	if o.PropagationDelay == 0 {
		o.PropagationDelay = defaultPropagationDelay
	}
	if o.ResyncPeriod == 0 {
		o.ResyncPeriod = defaultResyncPeriod
	}
	if o.StartupTimeout == 0 {
		o.StartupTimeout = defaultStartupTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log.GetSink() == nil {
		o.Log = logf.Log.WithName("certs")
	}
}

// validate checks defaulted options; errors name the flag (see BindFlags).
func (o *Options) validate() error {
	required := func(flag, value string) error {
		if value == "" {
			return fmt.Errorf("--%s is required in --cert-mode=%s", flag, o.Mode)
		}
		if errs := validation.IsDNS1123Subdomain(value); len(errs) > 0 {
			return fmt.Errorf("--%s=%q: %s", flag, value, errs[0])
		}
		return nil
	}
	var errs []error
	switch o.Mode {
	case ModeSelfManaged:
		errs = append(errs,
			required(flagSecret, o.SecretName),
			required(flagCASecret, o.CASecretName),
			required(flagServiceName, o.ServiceName),
			required(flagServiceNamespace, o.ServiceNamespace))
		if o.LegacySecretName != "" {
			errs = append(errs, required(flagLegacySecret, o.LegacySecretName))
		}
		if o.SecretName != "" && (o.CASecretName == o.SecretName || o.LegacySecretName == o.SecretName || o.LegacySecretName == o.CASecretName) {
			errs = append(errs, fmt.Errorf("--%s=%q, --%s=%q and --%s=%q must be three different Secrets",
				flagSecret, o.SecretName, flagCASecret, o.CASecretName, flagLegacySecret, o.LegacySecretName))
		}
		if o.WebhookConfigName != "" {
			errs = append(errs, required(flagWebhookConfig, o.WebhookConfigName))
		}
		if o.CAValidity < 0 || o.ServingValidity < 0 || o.PropagationDelay < 0 {
			errs = append(errs, fmt.Errorf("--%s, --%s and --%s must not be negative", flagCAValidity, flagServingValidity, flagPropagationDelay))
		}
		if o.ServingValidity > o.CAValidity {
			errs = append(errs, fmt.Errorf("--%s=%s is longer than --%s=%s", flagServingValidity, o.ServingValidity, flagCAValidity, o.CAValidity))
		}
		// A serving certificate due for renewal has a third of its life left
		// (at least a third of the CA's when clamped to it); waiting for a new
		// CA to propagate must fit in a third of that.
		if limit := min(o.ServingValidity, o.CAValidity/3) / 3; o.PropagationDelay >= limit {
			errs = append(errs, fmt.Errorf("--%s=%s must be less than %s (a third of the shorter of --%s and a third of --%s), or the served certificate expires while a new CA propagates",
				flagPropagationDelay, o.PropagationDelay, limit, flagServingValidity, flagCAValidity))
		}
	case ModeCertManager:
		errs = append(errs,
			required(flagSecret, o.SecretName),
			required(flagCertificate, o.CertificateName),
			required(flagServiceNamespace, o.ServiceNamespace))
	case ModeFiles:
	default:
		return fmt.Errorf("--%s=%q: want %s, %s or %s", flagMode, o.Mode, ModeSelfManaged, ModeCertManager, ModeFiles)
	}
	if o.ResyncPeriod < 0 || o.StartupTimeout < 0 {
		errs = append(errs, fmt.Errorf("--%s and --%s must not be negative", flagResyncPeriod, flagStartupTimeout))
	}
	return errors.Join(errs...)
}

// DNSNames are the names the serving certificate is valid for: how the API
// server (and anything else in the cluster) may address the Service.
func DNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}
