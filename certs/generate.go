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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority: a self-signed ECDSA P-256 CA certificate and
// its key, issuing serving and client certificates. The self-managed mode
// issues its CAs with the same code; NewCA, IssueServing and IssueClient are
// for tests and tools that need a throwaway CA and certificates it signs.
type CA struct{ kp *keyPair }

// NewCA issues a self-signed CA certificate named commonName, valid from now
// (not backdated) for validity, that signs only leaf certificates.
func NewCA(commonName string, validity time.Duration, now time.Time) (*CA, error) {
	kp, err := newCA(commonName, now, validity)
	if err != nil {
		return nil, err
	}
	return &CA{kp: kp}, nil
}

// Certificate is the CA's parsed certificate (for an x509.CertPool).
func (ca *CA) Certificate() *x509.Certificate { return ca.kp.cert }

// CertPEM is the CA's certificate in PEM (for a caBundle or ca.crt).
func (ca *CA) CertPEM() []byte { return ca.kp.certPEM }

// IssueServing issues a serving certificate (ECDSA P-256, server
// authentication) for dnsNames and ips, at least one name or address in all,
// signed by ca. It is valid from now for validity but never beyond the CA's
// NotAfter, backdated by a tenth of validity, at most a minute. It returns the
// certificate's PEM and its key's PEM (PKCS #8), as tls.crt and tls.key hold
// them.
func (ca *CA) IssueServing(dnsNames []string, ips []net.IP, validity time.Duration, now time.Time) (certPEM, keyPEM []byte, err error) {
	kp, err := newServing(ca.kp, dnsNames, ips, now, validity)
	if err != nil {
		return nil, nil, err
	}
	return kp.certPEM, kp.keyPEM, nil
}

// IssueClient issues a client certificate (ECDSA P-256, client
// authentication) for commonName, signed by ca, as IssueServing issues a
// serving one: for an API server to present to a webhook that requires
// client certificates (see the webhook's --client-ca-file). groups, if any,
// are its Organization, which Kubernetes reads as the user's groups (an API
// server's client certificate towards kubelets in system:masters, say).
func (ca *CA) IssueClient(commonName string, validity time.Duration, now time.Time, groups ...string) (certPEM, keyPEM []byte, err error) {
	if commonName == "" {
		return nil, nil, fmt.Errorf("issuing client certificate: empty common name")
	}
	subject := pkix.Name{CommonName: commonName, Organization: groups}
	kp, err := newLeaf(ca.kp, subject, nil, nil, x509.ExtKeyUsageClientAuth, now, validity)
	if err != nil {
		return nil, nil, err
	}
	return kp.certPEM, kp.keyPEM, nil
}

// keyPair is a parsed certificate with its private key, and their PEM.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// maxBackdate bounds how far before issuance a serving certificate's
// NotBefore lies, so an API server whose clock is a little behind already
// accepts it.
const maxBackdate = time.Minute

// backdate is how far NotBefore precedes issuance: a tenth of the validity
// (so short test lifetimes stay meaningful), at most maxBackdate.
func backdate(validity time.Duration) time.Duration {
	return min(maxBackdate, validity/10)
}

// caCommonName names the CA the self-managed mode issues at now.
func caCommonName(now time.Time) string {
	return fmt.Sprintf("meshinit-webhook-ca@%d", now.Unix())
}

// newCA issues a self-signed CA certificate named commonName, valid from now
// for validity.
// Unlike serving certificates it is not backdated: NotBefore is when it was
// issued, which the propagation delay counts from. Only certificates it
// signed are served, and (but at installation) only once it has propagated.
func newCA(commonName string, now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil, key)
}

// newServing issues a serving certificate for dnsNames and ips signed by ca,
// valid from now for validity but never beyond ca's NotAfter. Its CommonName
// is the first DNS name, else the first IP address.
func newServing(ca *keyPair, dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*keyPair, error) {
	var commonName string
	switch {
	case len(dnsNames) > 0:
		commonName = dnsNames[0]
	case len(ips) > 0:
		commonName = ips[0].String()
	default:
		return nil, fmt.Errorf("issuing serving certificate: no DNS names or IP addresses")
	}
	return newLeaf(ca, pkix.Name{CommonName: commonName}, dnsNames, ips, x509.ExtKeyUsageServerAuth, now, validity)
}

// newLeaf issues a certificate for subject, dnsNames and ips, for usage,
// signed by ca, valid from now (backdated, see backdate) for validity but
// never beyond ca's NotAfter.
func newLeaf(ca *keyPair, subject pkix.Name, dnsNames []string, ips []net.IP, usage x509.ExtKeyUsage, now time.Time, validity time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key of %q: %w", subject.CommonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		NotBefore:             now.Add(-backdate(validity)),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
	}
	return sign(tmpl, ca, key)
}

// sign creates the certificate for tmpl and key, signed by parent (self-signed
// when parent is nil), and parses it back.
func sign(tmpl *x509.Certificate, parent *keyPair, key crypto.Signer) (*keyPair, error) {
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate %q just signed: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key of %q: %w", tmpl.Subject.CommonName, err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}
