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
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/meshinit/meshinit/internal/testkit"
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

// TestCertManagerStartupCheck runs the startup check against a real API
// server, as the webhook's ServiceAccount with the chart's RBAC: first
// without cert-manager's CRDs, then with them (from cert-manager's Go module)
// through each state a Certificate passes before it is usable.
func TestCertManagerStartupCheck(t *testing.T) {
	in := newInstall(t, "meshinit-cm", certManagerValues)
	ctx := context.Background()
	opts := func() Options {
		o := in.options(t, "a")
		o.Mode, o.CertificateName, o.StartupTimeout = ModeCertManager, in.name+"-webhook", time.Second
		o.SecretName, o.CASecretName, o.LegacySecretName = in.name+"-webhook-tls", "", "" // the chart's in cert-manager mode
		return o
	}
	prefix := fmt.Sprintf("cert-manager certificate %s/%s-webhook (secret %s/%s-webhook-tls): ", in.name, in.name, in.name, in.name)

	p, err := New(in.asWebhook, opts())
	if err != nil {
		t.Fatal(err)
	}
	checkErr(t, "Setup without cert-manager", p.Setup(ctx), prefix+"the API cert-manager.io/v1 is not served: install cert-manager, or use --cert-mode=self-managed")

	crds := envtest.CRDInstallOptions{Paths: []string{certManagerCRD(t)}}
	if _, err := envtest.InstallCRDs(apiServer.Get(t).Config, crds); err != nil {
		t.Fatal(err)
	}
	// Gone again before a next run (-count) begins without them.
	t.Cleanup(func() { uninstallCRDs(t, crds, "certificates.cert-manager.io") })
	o := opts()
	p, err = New(in.asWebhook, o)
	if err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		err := p.mode.setup(ctx)
		checkErr(t, "setup", err, want)
		if err != nil && !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("error %q does not name the Certificate and the Secret", err)
		}
	}
	check("not found: was the chart installed with certManager.enabled=true?")

	objs := certsObjects(t, certManagerValues)
	var cert cmapi.Certificate
	decode(t, objs["Certificate/meshinit-webhook"], &cert)
	cert.ObjectMeta = metav1.ObjectMeta{Namespace: in.name, Name: in.name + "-webhook"}
	cert.Spec.SecretName = in.name + "-webhook-tls"
	if err := in.admin.Create(ctx, &cert); err != nil {
		t.Fatal(err)
	}
	check("not Ready: no Ready condition yet; is cert-manager running?")

	setReady := func(status cmmeta.ConditionStatus, reason, message string) {
		t.Helper()
		cert.Status.Conditions = []cmapi.CertificateCondition{{
			Type: cmapi.CertificateConditionReady, Status: status, Reason: reason, Message: message,
			ObservedGeneration: cert.Generation, LastTransitionTime: ptr.To(metav1.Now()),
		}}
		if err := in.admin.Status().Update(ctx, &cert); err != nil {
			t.Fatal(err)
		}
	}
	setReady(cmmeta.ConditionFalse, "DoesNotExist", "Issuing certificate as Secret does not exist")
	check("not Ready (False): DoesNotExist: Issuing certificate as Secret does not exist")
	setReady(cmmeta.ConditionTrue, "Ready", "Certificate is up to date and has not expired")
	check("the secret does not exist (the certificate is Ready)")

	ca := mustCA(t, time.Now(), time.Hour)
	serving := mustServing(t, ca, cert.Spec.DNSNames, time.Now(), time.Hour)
	if err := in.admin.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.name, Name: cert.Spec.SecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{keyTLSCert: serving.certPEM, keyTLSKey: serving.keyPEM, keyCACert: ca.certPEM},
	}); err != nil {
		t.Fatal(err)
	}
	check("the secret is not mounted at --cert-dir: loading ")

	// The kubelet mounts the Secret as the cert dir.
	if err := writeCertDir(o.CertDir, pairFiles(serving)); err != nil {
		t.Fatal(err)
	}
	if err := p.Setup(ctx); err != nil {
		t.Errorf("Setup with a Ready Certificate and its Secret mounted: %v", err)
	}
	if err := p.ReadyCheck(nil); err != nil {
		t.Errorf("not ready: %v", err)
	}
}

// certManagerCRD is the Certificate CRD cert-manager's Go module ships.
func certManagerCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("locating cert-manager's module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds", "cert-manager.io_certificates.yaml")
}

// uninstallCRDs deletes the CRDs of opts from the shared API server and
// waits until the API server no longer has the one named name.
func uninstallCRDs(t *testing.T, opts envtest.CRDInstallOptions, name string) {
	t.Helper()
	cfg := apiServer.Get(t).Config
	if err := envtest.UninstallCRDs(cfg, opts); err != nil {
		t.Errorf("deleting CRDs %v: %v", opts.Paths, err)
		return
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Error(err)
		return
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	testkit.Eventually(t, 30*time.Second, "CRD "+name+" deleted", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
