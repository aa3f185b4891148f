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

package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"slices"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

// The credentials Up writes: the API server's serving certificate verifies
// for every name clients use, its client certificate for kubelets is in
// system:masters, and the service account key is a private key.
func TestWritePKI(t *testing.T) {
	o := &Options{StateDir: t.TempDir()}
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	caPEM, err := writePKI(o)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk, err := os.ReadFile(o.pkiPath("ca.crt")); err != nil || string(onDisk) != string(caPEM) {
		t.Fatalf("ca.crt: %v, or not the CA writePKI returned", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	leaf := func(name string) *x509.Certificate {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(o.pkiPath(name+".crt"), o.pkiPath(name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return pair.Leaf
	}

	server := leaf("apiserver")
	for _, host := range []string{o.Address.String(), "127.0.0.1", o.kubernetesServiceIP().String(), "kubernetes.default.svc", "localhost"} {
		if _, err := server.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("apiserver.crt for %s: %v", host, err)
		}
	}

	client := leaf("kubelet-client")
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("kubelet-client.crt: %v", err)
	}
	if !slices.Equal(client.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("kubelet-client.crt groups %v, want [system:masters]", client.Subject.Organization)
	}

	if _, err := keyutil.PrivateKeyFromFile(o.pkiPath("sa.key")); err != nil {
		t.Errorf("sa.key: %v", err)
	}
}
