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
	"flag"
	"fmt"
)

// Flag names, shared with the chart's "meshinit.certs.args" template.
const (
	flagMode             = "cert-mode"
	flagCertDir          = "cert-dir"
	flagSecret           = "cert-secret"
	flagCASecret         = "cert-ca-secret"
	flagLegacySecret     = "cert-legacy-secret"
	flagServiceName      = "service-name"
	flagServiceNamespace = "service-namespace"
	flagWebhookConfig    = "webhook-config-name"
	flagCertificate      = "cert-manager-certificate"
	flagCAValidity       = "cert-ca-validity"
	flagServingValidity  = "cert-validity"
	flagPropagationDelay = "cert-propagation-delay"
	flagResyncPeriod     = "cert-resync-period"
	flagStartupTimeout   = "cert-startup-timeout"
)

// BindFlags registers one flag per option on fs, with the defaults shown.
// Call it before fs.Parse; o then holds what the command line said.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	d := Options{}
	d.setDefaults()
	fs.Func(flagMode, fmt.Sprintf("where the serving certificate comes from: %s, %s or %s (default %s)", ModeSelfManaged, ModeCertManager, ModeFiles, d.Mode),
		func(s string) error { o.Mode = Mode(s); return nil })
	fs.StringVar(&o.CertDir, flagCertDir, d.CertDir, "directory of tls.crt and tls.key (written in self-managed mode)")
	fs.StringVar(&o.SecretName, flagSecret, "", "Secret of the serving certificate: shared by replicas (self-managed) or the Certificate's (cert-manager)")
	fs.StringVar(&o.CASecretName, flagCASecret, "", "Secret of the CA key and certificates (self-managed)")
	fs.StringVar(&o.LegacySecretName, flagLegacySecret, "", "the one Secret of the previous layout, whose certificates are moved into the two and which is then deleted (self-managed; empty: none)")
	fs.StringVar(&o.ServiceName, flagServiceName, "", "the webhook's Service; the serving certificate is valid for its DNS names")
	fs.StringVar(&o.ServiceNamespace, flagServiceNamespace, "", "namespace of the Service, the Secret and the Certificate")
	fs.StringVar(&o.WebhookConfigName, flagWebhookConfig, "", "MutatingWebhookConfiguration whose caBundle self-managed mode keeps (empty: none)")
	fs.StringVar(&o.CertificateName, flagCertificate, "", "cert-manager Certificate checked at startup (cert-manager mode)")
	fs.DurationVar(&o.CAValidity, flagCAValidity, d.CAValidity, "lifetime of the self-managed CA, replaced at 2/3 of it")
	fs.DurationVar(&o.ServingValidity, flagServingValidity, d.ServingValidity, "lifetime of the self-managed serving certificate, renewed at 2/3 of it")
	fs.DurationVar(&o.PropagationDelay, flagPropagationDelay, d.PropagationDelay, "how long a new CA is in the caBundle before it signs the served certificate")
	fs.DurationVar(&o.ResyncPeriod, flagResyncPeriod, d.ResyncPeriod, "how often the Secret and caBundle are re-checked without a watch event")
	fs.DurationVar(&o.StartupTimeout, flagStartupTimeout, d.StartupTimeout, "how long startup waits for usable certificates")
}
