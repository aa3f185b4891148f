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
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"time"

	"k8s.io/client-go/util/keyutil"

	"github.com/meshinit/meshinit/certs"
)

// The cluster's credentials, all made by Up in StateDir/pki with package
// certs:
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
//   - sa.key: service account token signing (the API server verifies
//     tokens with its public half).
//
// Users authenticate with bearer tokens (tokens.csv): one per component,
// all in system:masters. This is a throwaway test cluster: nothing here is
// meant to be secure beyond staying on this machine.

// certValidity is how long the cluster's certificates last: longer than
// any cluster runs.
const certValidity = 10 * 365 * 24 * time.Hour

func (o *Options) pkiPath(name string) string { return o.path("pki", name) }

// writePKI makes the cluster's credentials and returns the CA's
// certificate (PEM).
func writePKI(o *Options) (caPEM []byte, err error) {
	now := time.Now()
	ca, err := certs.NewCA(o.Name+" CA", certValidity, now)
	if err != nil {
		return nil, err
	}
	apiCert, apiKey, err := ca.IssueServing(
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		[]net.IP{o.Address.AsSlice(), net.IPv4(127, 0, 0, 1), o.kubernetesServiceIP().AsSlice()},
		certValidity, now)
	if err != nil {
		return nil, err
	}
	clientCert, clientKey, err := ca.IssueClient("kube-apiserver-kubelet-client", certValidity, now, "system:masters")
	if err != nil {
		return nil, err
	}
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.path("pki"), 0o700); err != nil {
		return nil, err
	}
	return ca.CertPEM(), writeFiles(map[string][]byte{
		o.pkiPath("ca.crt"):             ca.CertPEM(),
		o.pkiPath("apiserver.crt"):      apiCert,
		o.pkiPath("apiserver.key"):      apiKey,
		o.pkiPath("kubelet-client.crt"): clientCert,
		o.pkiPath("kubelet-client.key"): clientKey,
		o.pkiPath("sa.key"):             saKey,
	})
}

// newToken returns a random bearer token.
func newToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
