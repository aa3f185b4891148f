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
	selfManaged := Options{SecretName: "meshinit-webhook-tls", ServiceName: "meshinit-webhook", ServiceNamespace: "meshinit-system", WebhookConfigName: "meshinit"}
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
		{"self-managed without service", func(o *Options) { o.ServiceName = "" }, selfManaged, "--service-name is required"},
		{"bad namespace", func(o *Options) { o.ServiceNamespace = "Meshinit_System" }, selfManaged, `--service-namespace="Meshinit_System": a lowercase RFC 1123 subdomain`},
		{"serving outlives CA", func(o *Options) { o.ServingValidity = 2 * o.CAValidity }, Options{SecretName: "s", ServiceName: "s", ServiceNamespace: "n", CAValidity: time.Hour}, "--cert-validity=2h0m0s is longer than --cert-ca-validity=1h0m0s"},
		{"propagation delay too long", func(o *Options) { o.PropagationDelay = 10 * time.Minute }, Options{SecretName: "s", ServiceName: "s", ServiceNamespace: "n", CAValidity: 90 * time.Minute, ServingValidity: time.Hour}, "--cert-propagation-delay=10m0s must be less than 10m0s"},
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
