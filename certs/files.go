package certs

import "context"

// files is ModeFiles: someone else puts tls.crt and tls.key into the cert
// dir and keeps them fresh; the webhook server's certwatcher reloads them.
type files struct{ opts Options }

func (f files) setup(context.Context) error {
	return checkCertDir(f.opts.CertDir, f.opts.Clock.Now())
}

func (f files) run(context.Context) error { return nil }
