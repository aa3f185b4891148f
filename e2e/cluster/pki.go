package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The cluster's credentials, all made by Up in StateDir/pki:
//
//   - ca.crt: the CA that signs the API server's serving certificate and the
//     API server's client certificate for kubelets; the kubeconfigs trust
//     it, the kubelet accepts clients it signed, and kube-controller-manager
//     publishes it to pods (the kube-root-ca.crt ConfigMap), so in-cluster
//     clients verify the API server through the `kubernetes` Service.
//   - apiserver.crt: valid for Address, 127.0.0.1, the `kubernetes`
//     Service's IP and DNS names.
//   - kubelet-client.crt: the API server's identity towards the kubelet
//     (group system:masters), for `kubectl logs` and `exec`.
//   - sa.key, sa.pub: service account token signing.
//
// Users authenticate with bearer tokens (tokens.csv): one per component,
// all in system:masters. This is a throwaway test cluster: nothing here is
// meant to be secure beyond staying on this machine.

const certValidity = 10 * 365 * 24 * time.Hour

type pki struct {
	dir     string
	ca      *x509.Certificate
	caKey   crypto.Signer
	caPEM   []byte
	serials int64
}

func (o *Options) pkiPath(name string) string { return o.path("pki", name) }

func writePKI(o *Options) error {
	p := &pki{dir: o.path("pki")}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	if err := p.makeCA(o.Name); err != nil {
		return err
	}
	svc := o.kubernetesServiceIP().AsSlice()
	if err := p.issue("apiserver", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{o.Address.AsSlice(), net.IPv4(127, 0, 0, 1), svc},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}); err != nil {
		return err
	}
	if err := p.issue("kubelet-client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(p.dir, "sa.key"), sa); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func (p *pki) makeCA(name string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("pki: create CA: %w", err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		return err
	}
	p.caKey, p.serials = key, 1
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writeKey(filepath.Join(p.dir, "ca.key"), key); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.dir, "ca.crt"), p.caPEM, 0o644)
}

// issue signs tmpl with the CA and writes <name>.crt and <name>.key.
func (p *pki) issue(name string, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	p.serials++
	tmpl.SerialNumber = big.NewInt(p.serials)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return fmt.Errorf("pki: issue %s: %w", name, err)
	}
	if err := writeKey(filepath.Join(p.dir, name+".key"), key); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(file string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// newToken returns a random bearer token.
func newToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
