package certs

import (
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestCheckIssued(t *testing.T) {
	cert := func(secret string, conds ...cmapi.CertificateCondition) *cmapi.Certificate {
		c := &cmapi.Certificate{Spec: cmapi.CertificateSpec{SecretName: secret}, Status: cmapi.CertificateStatus{Conditions: conds}}
		c.Generation = 2
		return c
	}
	ready := cmapi.CertificateCondition{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionTrue, ObservedGeneration: 2}
	issuing := cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue}
	notReady := cmapi.CertificateCondition{Type: cmapi.CertificateConditionReady, Status: cmmeta.ConditionFalse, Reason: "DoesNotExist", Message: "Issuing certificate as Secret does not exist"}
	stale := ready
	stale.ObservedGeneration = 1
	secret := &corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}

	for _, tc := range []struct {
		name   string
		cert   *cmapi.Certificate
		secret *corev1.Secret
		want   string
	}{
		{"ready with its secret", cert("tls", issuing, ready), secret, ""},
		{"other secret", cert("other", ready), secret, `the certificate writes secret "other", not "tls" (--cert-secret)`},
		{"no conditions", cert("tls"), secret, "no Ready condition yet; is cert-manager running?"},
		{"not ready", cert("tls", notReady), nil, "not Ready (False): DoesNotExist: Issuing certificate as Secret does not exist"},
		{"ready for an older spec", cert("tls", stale), secret, "Ready is of generation 1, the certificate is at 2"},
		{"secret missing", cert("tls", ready), nil, "the secret does not exist"},
		{"secret without key", cert("tls", ready), &corev1.Secret{Data: map[string][]byte{"tls.crt": []byte("c")}}, "the secret has no tls.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, "checkIssued", checkIssued(tc.cert, tc.secret, "tls"), tc.want)
		})
	}
}
