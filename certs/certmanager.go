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
	"context"
	"errors"
	"fmt"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// certManager is ModeCertManager: cert-manager issues and renews the serving
// certificate (the chart's Certificate), the kubelet mounts its Secret as
// the cert dir, cert-manager's cainjector fills the caBundle. meshinit only
// checks, at startup, that all this is in place.
type certManager struct {
	opts   Options
	client client.Client
}

// setup succeeds when the Certificate is Ready, its Secret holds a key pair
// and the cert dir (the mounted Secret) serves it.
func (m *certManager) setup(ctx context.Context) error {
	if err := m.checkCertificate(ctx); err != nil {
		return m.wrap(err)
	}
	if err := checkCertDir(m.opts.CertDir, m.opts.Clock.Now()); err != nil {
		return m.wrap(fmt.Errorf("the secret is not mounted at --%s: %w", flagCertDir, err))
	}
	return nil
}

// wrap names the Certificate and its Secret in err.
func (m *certManager) wrap(err error) error {
	return fmt.Errorf("cert-manager certificate %s/%s (secret %s/%s): %w",
		m.opts.ServiceNamespace, m.opts.CertificateName, m.opts.ServiceNamespace, m.opts.SecretName, err)
}

// run has nothing to do: the kubelet updates the mounted Secret and the
// webhook server's certwatcher reloads it.
func (m *certManager) run(context.Context) error { return nil }

// checkCertificate reads the Certificate and its Secret and checks them.
func (m *certManager) checkCertificate(ctx context.Context) error {
	var cert cmapi.Certificate
	err := m.client.Get(ctx, client.ObjectKey{Namespace: m.opts.ServiceNamespace, Name: m.opts.CertificateName}, &cert)
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Errorf("the API %s is not served: install cert-manager, or use --%s=%s", cmapi.SchemeGroupVersion, flagMode, ModeSelfManaged)
	case apierrors.IsNotFound(err):
		return errors.New("not found: was the chart installed with certManager.enabled=true?")
	case err != nil:
		return fmt.Errorf("reading the certificate: %w", err)
	}

	var secret corev1.Secret
	err = m.client.Get(ctx, client.ObjectKey{Namespace: m.opts.ServiceNamespace, Name: m.opts.SecretName}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		return checkIssued(&cert, nil, m.opts.SecretName)
	case err != nil:
		return fmt.Errorf("reading the secret: %w", err)
	}
	return checkIssued(&cert, &secret, m.opts.SecretName)
}

// checkIssued is the startup check on the Certificate and its Secret (nil
// when missing): the Certificate writes the expected Secret, is Ready for its
// current spec, and the Secret holds a key pair.
func checkIssued(cert *cmapi.Certificate, secret *corev1.Secret, secretName string) error {
	if cert.Spec.SecretName != secretName {
		return fmt.Errorf("the certificate writes secret %q, not %q (--%s)", cert.Spec.SecretName, secretName, flagSecret)
	}
	ready := readyCondition(cert)
	switch {
	case ready == nil:
		return errors.New("not Ready: no Ready condition yet; is cert-manager running?")
	case ready.Status != cmmeta.ConditionTrue:
		return fmt.Errorf("not Ready (%s): %s: %s", ready.Status, ready.Reason, ready.Message)
	case ready.ObservedGeneration != 0 && ready.ObservedGeneration < cert.Generation:
		return fmt.Errorf("not Ready for its current spec: Ready is of generation %d, the certificate is at %d", ready.ObservedGeneration, cert.Generation)
	case secret == nil:
		return errors.New("the secret does not exist (the certificate is Ready)")
	}
	for _, k := range []string{keyTLSCert, keyTLSKey} {
		if len(secret.Data[k]) == 0 {
			return fmt.Errorf("the secret has no %s (the certificate is Ready)", k)
		}
	}
	return nil
}

// readyCondition is cert's Ready condition, nil if it has none.
func readyCondition(cert *cmapi.Certificate) *cmapi.CertificateCondition {
	for i, c := range cert.Status.Conditions {
		if c.Type == cmapi.CertificateConditionReady {
			return &cert.Status.Conditions[i]
		}
	}
	return nil
}
