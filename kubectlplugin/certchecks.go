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

package kubectlplugin

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meshinit/meshinit/certs"
)

// minValidity is how long a certificate must still be valid: less is a
// problem. Self-managed mode and cert-manager renew with a third of the
// lifetime left (30 days of the default 90-day serving certificate), so a
// certificate this close to its end was not renewed.
const minValidity = 7 * 24 * time.Hour

// caBundle is one webhook's caBundle.
type caBundle struct {
	config, webhook string
	cas             []*x509.Certificate
}

// servedCert is one certificate served, and everywhere it was read.
type servedCert struct {
	chain []*x509.Certificate
	from  []string
}

// checkCertificates: in webhook mode, every webhook's caBundle trusts the
// certificate each replica serves, for the Service's name, and neither
// that certificate nor the CA that signed it expires within minValidity.
func checkCertificates(in Install, now time.Time) []Finding {
	if len(in.WebhookConfigs) == 0 {
		return nil
	}
	var out []Finding
	var bundles []caBundle
	for _, m := range in.WebhookConfigs {
		for _, w := range m.Webhooks {
			cas, err := certs.ParseCertsPEM(w.ClientConfig.CABundle)
			if err != nil {
				out = append(out, problem(CodeCertificateTrusted, object("MutatingWebhookConfiguration", m.Name),
					fmt.Sprintf("webhook %s: caBundle %v: the API server cannot verify the webhook", w.Name, err), trustFix(in)))
				continue
			}
			bundles = append(bundles, caBundle{m.Name, w.Name, cas})
		}
	}
	served, read := distinctServed(in.Served)
	const obj = "serving certificate"
	switch {
	case len(served) == 0 && len(in.Served) == 0:
		// No endpoint to read it from: checkWebhook says so.
		return append(out, info(CodeCertificateRead, obj, "not checked: no ready endpoint serves it and the webhook's arguments name no Secret"))
	case len(served) == 0:
		return append(out, problem(CodeCertificateRead, obj, "cannot be read: "+read,
			fmt.Sprintf("kubectl meshinit check   # where the webhook pods' addresses are reachable, or as a user who may get secrets in %s", in.Release.Namespace)))
	case read != "":
		out = append(out, info(CodeCertificateRead, obj, read))
	}

	serverName := in.serverName() // there is a Service: served reads only its endpoints and Secret
	var signers []*x509.Certificate
	for _, s := range served {
		from := "served by " + strings.Join(s.from, ", ") + ": "
		var untrusted []string
		for _, b := range bundles {
			if err := verify(s.chain, b.cas, serverName, now); err != nil {
				untrusted = append(untrusted, fmt.Sprintf("webhook %s of %s (%v)", b.webhook, b.config, err))
			}
		}
		if len(untrusted) > 0 {
			out = append(out, problem(CodeCertificateTrusted, obj, from+"the caBundle does not trust it for "+serverName+": "+strings.Join(untrusted, "; "), trustFix(in)))
		} else {
			out = append(out, ok(CodeCertificateTrusted, obj, fmt.Sprintf("%strusted for %s by the caBundle of every webhook (%d)", from, serverName, len(bundles))))
		}
		out = append(out, expiry(CodeCertificateExpiry, obj, from, s.chain[0], now, renewFix(in)))
		for _, b := range bundles {
			for _, ca := range b.cas {
				if s.chain[0].CheckSignatureFrom(ca) == nil && !slices.ContainsFunc(signers, ca.Equal) {
					signers = append(signers, ca)
				}
			}
		}
	}
	for _, ca := range signers {
		out = append(out, expiry(CodeCAExpiry, "CA "+ca.Subject.CommonName, "in the caBundle, signed the serving certificate: ", ca, now, caFix(in)))
	}
	return out
}

// distinctServed groups what was read by certificate, and says why the
// sources that could not be read could not (e.g. endpoints not reachable
// from here when the Secret was read instead).
func distinctServed(sources []Served) (served []servedCert, unread string) {
	var failed []string
	for _, s := range sources {
		if s.Err != nil {
			failed = append(failed, s.From+": "+s.Err.Error())
			continue
		}
		i := slices.IndexFunc(served, func(c servedCert) bool { return bytes.Equal(c.chain[0].Raw, s.Chain[0].Raw) })
		if i < 0 {
			served = append(served, servedCert{chain: s.Chain})
			i = len(served) - 1
		}
		served[i].from = append(served[i].from, s.From)
	}
	return served, strings.Join(failed, "; ")
}

// verify checks chain (the served certificate first) as the API server
// does: against the caBundle's CAs, for the Service's name, at now.
func verify(chain, cas []*x509.Certificate, serverName string, now time.Time) error {
	roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, DNSName: serverName, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// expiry is a certificate's validity at now: a problem when it is not
// valid or expires within minValidity.
func expiry(code Code, obj, prefix string, c *x509.Certificate, now time.Time, fix string) Finding {
	left := c.NotAfter.Sub(now)
	date := c.NotAfter.UTC().Format(time.RFC3339)
	switch {
	case now.Before(c.NotBefore):
		return problem(code, obj, fmt.Sprintf("%snot valid before %s (this machine's clock behind?)", prefix, c.NotBefore.UTC().Format(time.RFC3339)), fix)
	case left <= 0:
		return problem(code, obj, fmt.Sprintf("%sexpired %s ago (%s)", prefix, days(-left), date), fix)
	case left < minValidity:
		return problem(code, obj, fmt.Sprintf("%sexpires in %s (%s), in less than %s: it was not renewed", prefix, days(left), date, days(minValidity)), fix)
	}
	return ok(code, obj, fmt.Sprintf("%sexpires in %s (%s)", prefix, days(left), date))
}

// days is d in whole days, or hours under two days.
func days(d time.Duration) string {
	if d < 48*time.Hour {
		return plural(int(d.Hours()), "hour", "hours")
	}
	return plural(int(d.Hours()/24), "day", "days")
}

// trustFix puts the CA of the served certificate into the caBundle, as the
// certificate mode does it.
func trustFix(in Install) string {
	ns := in.Release.Namespace
	switch in.CertMode() {
	case certs.ModeCertManager:
		return "kubectl -n cert-manager rollout restart deployment/cert-manager-cainjector   # cainjector writes the caBundle (annotation cert-manager.io/inject-ca-from)"
	case certs.ModeFiles:
		var ops []string
		for _, m := range in.WebhookConfigs {
			for i := range m.Webhooks {
				ops = append(ops, fmt.Sprintf(`{\"op\":\"replace\",\"path\":\"/webhooks/%d/clientConfig/caBundle\",\"value\":\"$CA\"}`, i))
			}
		}
		name := "<config>"
		if len(in.WebhookConfigs) > 0 {
			name = in.WebhookConfigs[0].Name
		}
		return fmt.Sprintf(`CA=$(base64 -w0 <the CA that signed Secret %s/%s's tls.crt>) && kubectl patch mutatingwebhookconfiguration %s --type=json -p "[%s]"`,
			ns, servedSecret(in), name, strings.Join(ops, ","))
	}
	return deploymentFix(in, "rollout restart") + "   # each replica writes its CA into the caBundle when it starts; if that fails its log says why"
}

// renewFix issues a new serving certificate, as the certificate mode does.
func renewFix(in Install) string {
	ns, secret := in.Release.Namespace, servedSecret(in)
	switch in.CertMode() {
	case certs.ModeCertManager:
		return fmt.Sprintf("cmctl renew -n %s %s", ns, in.Server.Certs.CertificateName)
	case certs.ModeFiles:
		return fmt.Sprintf("kubectl -n %s create secret tls %s --cert=<new tls.crt> --key=<new tls.key> --dry-run=client -o yaml | kubectl apply -f -", ns, secret)
	}
	return emptySecrets(ns, secret) + "   # the webhook, watching it, issues a new certificate"
}

// emptySecrets empties self-managed Secrets, which the webhook then fills
// (it may not create them).
func emptySecrets(ns string, names ...string) string {
	var cmds []string
	for _, n := range names {
		cmds = append(cmds, fmt.Sprintf(`kubectl -n %s patch secret %s --type=json -p '[{"op":"remove","path":"/data"}]'`, ns, n))
	}
	return strings.Join(cmds, " && ")
}

// caFix replaces the CA, as the certificate mode does.
func caFix(in Install) string {
	switch in.CertMode() {
	case certs.ModeCertManager:
		return fmt.Sprintf("cmctl renew -n %s %s-ca   # the chart's CA Certificate (with certManager.issuerRef, renew your issuer's CA)", in.Release.Namespace, in.Server.Certs.CertificateName)
	case certs.ModeFiles:
		return "issue a new CA and serving certificate, then: " + renewFix(in) + " && " + trustFix(in)
	}
	return emptySecrets(in.Release.Namespace, in.Server.Certs.CASecretName, servedSecret(in)) +
		"   # the webhook, watching them, issues a new CA and certificate, and keeps the old CA in the caBundle meanwhile"
}

// deploymentFix is a kubectl command (verb) on the webhook's Deployment.
func deploymentFix(in Install, verb string) string {
	name := "<webhook deployment>"
	if in.Deployment != nil {
		name = in.Deployment.Name
	}
	return fmt.Sprintf("kubectl -n %s %s deployment/%s", in.Release.Namespace, verb, name)
}
