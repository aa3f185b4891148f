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
	"testing"
	"time"
)

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if o.Mode != ModeSelfManaged || o.CAValidity != defaultCAValidity || o.ServingValidity != defaultServingValidity ||
		o.PropagationDelay != defaultPropagationDelay || o.ResyncPeriod != defaultResyncPeriod || o.StartupTimeout != defaultStartupTimeout ||
		o.CertDir == "" || o.Clock == nil || o.Log.GetSink() == nil {
		t.Errorf("defaults not filled in: %+v", o)
	}
}

func TestOptionsValidate(t *testing.T) {
	selfManaged := Options{SecretName: "meshinit-webhook-serving", CASecretName: "meshinit-webhook-signer", LegacySecretName: "meshinit-webhook-tls",
		ServiceName: "meshinit-webhook", ServiceNamespace: "meshinit-system", WebhookConfigName: "meshinit"}
	certManager := Options{Mode: ModeCertManager, SecretName: "meshinit-webhook-tls", CertificateName: "meshinit-webhook", ServiceNamespace: "meshinit-system"}
	for _, tc := range []struct {
		name   string
		modify func(o *Options)
		base   Options
		want   string
	}{
		{"self-managed valid", func(*Options) {}, selfManaged, ""},
		{"self-managed without a webhook configuration", func(o *Options) { o.WebhookConfigName = "" }, selfManaged, ""},
		{"self-managed without secret", func(o *Options) { o.SecretName = "" }, selfManaged, "--cert-secret is required in --cert-mode=self-managed"},
		{"self-managed without the CA's secret", func(o *Options) { o.CASecretName = "" }, selfManaged, "--cert-ca-secret is required in --cert-mode=self-managed"},
		{"self-managed without a previous layout", func(o *Options) { o.LegacySecretName = "" }, selfManaged, ""},
		{"one secret for the CA and the serving certificate", func(o *Options) { o.CASecretName = o.SecretName }, selfManaged,
			`--cert-secret="meshinit-webhook-serving", --cert-ca-secret="meshinit-webhook-serving" and --cert-legacy-secret="meshinit-webhook-tls" must be three different Secrets`},
		{"the previous layout's secret is the CA's", func(o *Options) { o.LegacySecretName = o.CASecretName }, selfManaged, "must be three different Secrets"},
		{"self-managed without service", func(o *Options) { o.ServiceName = "" }, selfManaged, "--service-name is required"},
		{"bad namespace", func(o *Options) { o.ServiceNamespace = "Meshinit_System" }, selfManaged, `--service-namespace="Meshinit_System": a lowercase RFC 1123 subdomain`},
		{"serving outlives CA", func(o *Options) { o.ServingValidity = 2 * o.CAValidity }, Options{SecretName: "s", CASecretName: "ca", ServiceName: "s", ServiceNamespace: "n", CAValidity: time.Hour}, "--cert-validity=2h0m0s is longer than --cert-ca-validity=1h0m0s"},
		{"propagation delay too long", func(o *Options) { o.PropagationDelay = 10 * time.Minute }, Options{SecretName: "s", CASecretName: "ca", ServiceName: "s", ServiceNamespace: "n", CAValidity: 90 * time.Minute, ServingValidity: time.Hour}, "--cert-propagation-delay=10m0s must be less than 10m0s"},
		{"negative validity", func(o *Options) { o.ServingValidity = -time.Hour }, selfManaged, "must not be negative"},
		{"cert-manager valid", func(*Options) {}, certManager, ""},
		{"cert-manager without certificate", func(o *Options) { o.CertificateName = "" }, certManager, "--cert-manager-certificate is required in --cert-mode=cert-manager"},
		{"files needs nothing", func(*Options) {}, Options{Mode: ModeFiles}, ""},
		{"unknown mode", func(o *Options) { o.Mode = "vault" }, Options{}, `--cert-mode="vault": want self-managed, cert-manager or files`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.base
			tc.modify(&o)
			o.setDefaults()
			checkErr(t, "validate", o.validate(), tc.want)
		})
	}
}

func TestBindFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	err := fs.Parse([]string{
		"--cert-mode=cert-manager", "--cert-dir=/certs", "--cert-secret=s", "--service-name=svc", "--service-namespace=ns",
		"--webhook-config-name=cfg", "--cert-manager-certificate=c", "--cert-ca-validity=100h", "--cert-validity=10h",
		"--cert-propagation-delay=1m", "--cert-resync-period=2m", "--cert-startup-timeout=3m",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Mode: ModeCertManager, CertDir: "/certs", SecretName: "s", ServiceName: "svc", ServiceNamespace: "ns",
		WebhookConfigName: "cfg", CertificateName: "c", CAValidity: 100 * time.Hour, ServingValidity: 10 * time.Hour,
		PropagationDelay: time.Minute, ResyncPeriod: 2 * time.Minute, StartupTimeout: 3 * time.Minute}
	if o != want {
		t.Errorf("parsed %+v\nwant %+v", o, want)
	}

	var d Options
	unset := flag.NewFlagSet("defaults", flag.ContinueOnError)
	d.BindFlags(unset)
	if err := unset.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if d.CAValidity != defaultCAValidity || d.Mode != "" {
		t.Errorf("unparsed flags give %+v, want the defaults (mode filled in by New)", d)
	}
}
