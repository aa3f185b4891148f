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
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Keys of the self-managed Secret (type kubernetes.io/tls) and of the files
// in the cert dir.
const (
	// keyTLSCert and keyTLSKey hold the serving certificate and its key.
	keyTLSCert = corev1.TLSCertKey
	keyTLSKey  = corev1.TLSPrivateKeyKey
	// keyCACert holds the CAs to trust, the caBundle: the signing CA first,
	// then older CAs that have not expired yet.
	keyCACert = "ca.crt"
	// keyCAKey holds the private key of the first certificate in ca.crt.
	keyCAKey = "ca.key"
)

// stored is the parsed content of the self-managed Secret. A part that is
// missing or unusable is nil with its error set, so the decision can say why
// it replaces it.
type stored struct {
	signer    *keyPair
	signerErr error
	// trusted is ca.crt: signer.cert first. Nil when ca.crt is unusable.
	trusted []*x509.Certificate

	serving    *keyPair
	servingErr error
}

// parseStored parses the Secret's data; it never fails, see stored.
func parseStored(data map[string][]byte) stored {
	var s stored
	s.trusted, s.signer, s.signerErr = parseCA(data[keyCACert], data[keyCAKey])
	s.serving, s.servingErr = parseKeyPair(keyTLSCert, data[keyTLSCert], keyTLSKey, data[keyTLSKey])
	return s
}

// parseCA parses the trust bundle and the signing CA (its first certificate
// with caKey).
func parseCA(caCert, caKey []byte) ([]*x509.Certificate, *keyPair, error) {
	trusted, err := ParseCertsPEM(caCert)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyCACert, err)
	}
	first := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: trusted[0].Raw})
	signer, err := parseKeyPair(keyCACert, first, keyCAKey, caKey)
	if err != nil {
		return trusted, nil, err
	}
	if !signer.cert.IsCA {
		return trusted, nil, fmt.Errorf("%s: first certificate %q is not a CA", keyCACert, signer.cert.Subject.CommonName)
	}
	return trusted, signer, nil
}

// parseKeyPair parses one certificate (the first in certPEM) and its key;
// errors name the keys.
func parseKeyPair(certName string, certPEM []byte, keyName string, keyPEM []byte) (*keyPair, error) {
	certs, err := ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certName, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyName, err)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, fmt.Errorf("%s does not match the certificate in %s", keyName, certName)
	}
	return &keyPair{cert: certs[0], key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// ParseCertsPEM parses every CERTIFICATE block of data (a caBundle, ca.crt,
// tls.crt); there must be at least one and nothing else. Errors name the
// block.
func ParseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("missing")
	}
	var certs []*x509.Certificate
	for rest := data; len(bytes.TrimSpace(rest)) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("block %d: not PEM", len(certs)+1)
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("block %d: type %q, want CERTIFICATE", len(certs)+1, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	return certs, nil
}

// parseKeyPEM parses a PKCS#8, SEC 1 (EC) or PKCS#1 (RSA) private key.
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, errors.New("missing")
		}
		return nil, errors.New("not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM type %q, want PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", block.Type, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", key)
	}
	return signer, nil
}

// publicKeysEqual compares public keys of any of the standard library's types.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}

// encodeCertsPEM is the PEM of certs, in order.
func encodeCertsPEM(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		buf.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
	}
	return buf.Bytes()
}
