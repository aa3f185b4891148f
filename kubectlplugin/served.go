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
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/certs"
)

// Served is the serving certificate as one source presents it: a replica's
// endpoint, which `check` connects to as the API server does, or, when no
// endpoint can be reached from here, the Secret the certificate is kept in.
type Served struct {
	// From says where it was read: "endpoint 10.0.0.5:9443" or "Secret
	// ns/name".
	From string `json:"from"`
	// Chain is what it presented, the serving certificate first.
	Chain []*x509.Certificate `json:"-"`
	// Err is why it could not be read; Chain is then empty.
	Err error `json:"-"`
}

// dialTimeout bounds connecting to one endpoint and its TLS handshake.
const dialTimeout = 3 * time.Second

// served reads the certificate each ready endpoint of the webhook serves,
// all at once. When none can be reached (pod addresses are often not
// routable from an operator's machine), it reads the certificate Secret
// instead, if the webhook's arguments name one; the endpoints' errors are
// kept, to say why.
func (c *clients) served(ctx context.Context, in Install) []Served {
	var addrs []string
	for _, s := range in.Endpoints {
		port := endpointPort(s, in.Service)
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				addrs = append(addrs, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	slices.Sort(addrs)
	out := make([]Served, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			out[i] = Served{From: "endpoint " + addr}
			out[i].Chain, out[i].Err = c.dial(ctx, addr, in.serverName())
		})
	}
	wg.Wait()
	for _, s := range out {
		if s.Err == nil {
			return out
		}
	}
	if secret := servedSecret(in); secret != "" {
		s := Served{From: "Secret " + in.Release.Namespace + "/" + secret}
		s.Chain, s.Err = c.secretCert(ctx, in.Release.Namespace, secret)
		out = append(out, s)
	}
	return out
}

// endpointPort is the port of slice that carries the Service's port 443
// (the only one the chart's Service has); 0 when there is none.
func endpointPort(slice discoveryv1.EndpointSlice, svc *corev1.Service) int32 {
	name := ""
	if svc != nil && len(svc.Spec.Ports) > 0 {
		name = svc.Spec.Ports[0].Name
	}
	for _, p := range slice.Ports {
		if p.Port != nil && (p.Name == nil || *p.Name == name || len(slice.Ports) == 1) {
			return *p.Port
		}
	}
	return 0
}

// dialTLS connects to addr and returns the certificates it presents,
// verifying nothing (the caller checks them against the caBundle).
func dialTLS(ctx context.Context, addr, serverName string) ([]*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{ServerName: serverName, InsecureSkipVerify: true}} // #nosec G402: only reads the certificate
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	chain := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(chain) == 0 {
		return nil, errors.New("no certificate presented")
	}
	return chain, nil
}

// servedSecret is the Secret holding the serving certificate, as the
// webhook's arguments (self-managed and cert-manager modes) or its
// serving-certs volume (files mode) name it; "" when neither does.
func servedSecret(in Install) string {
	if s := in.Server.Certs.SecretName; s != "" {
		return s
	}
	if in.Deployment == nil {
		return ""
	}
	for _, v := range in.Deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Name == "serving-certs" {
			return v.Secret.SecretName
		}
	}
	return ""
}

// secretCert reads tls.crt of a kubernetes.io/tls Secret.
func (c *clients) secretCert(ctx context.Context, namespace, name string) ([]*x509.Certificate, error) {
	s, err := c.kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, readError("get", "secrets", namespace, err)
	}
	chain, err := certs.ParseCertsPEM(s.Data[corev1.TLSCertKey])
	if err != nil {
		return nil, fmt.Errorf("%s of Secret %s/%s: %w", corev1.TLSCertKey, namespace, name, err)
	}
	return chain, nil
}
