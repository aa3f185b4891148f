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
	"crypto/x509"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The two Secrets of self-managed mode, and the one of the previous layout.
var (
	secretKey   = client.ObjectKey{Namespace: "ns", Name: "webhook-serving"}
	caSecretKey = client.ObjectKey{Namespace: "ns", Name: "webhook-signer"}
	legacyKey   = client.ObjectKey{Namespace: "ns", Name: "webhook-tls"}
)

func replica(c client.WithWatch, clk *clocktesting.FakePassiveClock) *selfManaged {
	o := Options{SecretName: secretKey.Name, CASecretName: caSecretKey.Name, LegacySecretName: legacyKey.Name,
		ServiceName: "svc", ServiceNamespace: secretKey.Namespace, Clock: clk,
		CAValidity: caLife, ServingValidity: servLife, PropagationDelay: delay}
	o.setDefaults()
	return &selfManaged{opts: o, client: c, dnsNames: DNSNames("svc", "ns")}
}

// chartSecrets is a store holding the two Secrets as the chart creates
// them: empty, Opaque.
func chartSecrets(objs ...client.Object) client.WithWatch {
	for _, k := range []client.ObjectKey{secretKey, caSecretKey} {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}, Type: corev1.SecretTypeOpaque})
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func publishedAll(*x509.Certificate) bool { return true }

func getSecret(t *testing.T, c client.Client, key client.ObjectKey) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(context.Background(), key, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestSyncSecretSplitsTheCAKey: the first round fills the chart's two
// Secrets: the CA's with the CA key and certificates, the serving one with
// the serving certificate, its key and the CA certificates, never the CA
// key; they stay Opaque.
func TestSyncSecretSplitsTheCAKey(t *testing.T) {
	store := chartSecrets()
	data, _, err := replica(store, clocktesting.NewFakePassiveClock(t0)).syncSecret(context.Background(), publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	ca, serving := getSecret(t, store, caSecretKey), getSecret(t, store, secretKey)
	if got := keys(ca.Data); strings.Join(got, ",") != "ca.crt,ca.key" {
		t.Errorf("the CA's Secret holds %v, want ca.crt and ca.key", got)
	}
	if got := keys(serving.Data); strings.Join(got, ",") != "ca.crt,tls.crt,tls.key" {
		t.Errorf("the serving Secret holds %v, want tls.crt, tls.key and ca.crt", got)
	}
	if !sameData(joined(ca, serving), data) || string(serving.Data[keyCACert]) != string(ca.Data[keyCACert]) {
		t.Error("the two Secrets do not hold what syncSecret returned")
	}
	if ca.Type != corev1.SecretTypeOpaque || serving.Type != corev1.SecretTypeOpaque {
		t.Errorf("types %q and %q, want the chart's Opaque", ca.Type, serving.Type)
	}
	if s := parseStored(data); s.signerErr != nil || s.servingErr != nil || s.serving.cert.CheckSignatureFrom(s.signer.cert) != nil {
		t.Errorf("stored certificates unusable: %v, %v", s.signerErr, s.servingErr)
	}
}

// TestSyncSecretNeedsTheChartsSecrets: the webhook creates no Secret; a
// missing one is an error that says so, and nothing is created.
func TestSyncSecretNeedsTheChartsSecrets(t *testing.T) {
	for _, missing := range []client.ObjectKey{secretKey, caSecretKey} {
		store := chartSecrets()
		if err := store.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: missing.Namespace, Name: missing.Name}}); err != nil {
			t.Fatal(err)
		}
		_, _, err := replica(store, clocktesting.NewFakePassiveClock(t0)).syncSecret(context.Background(), publishedAll)
		checkErr(t, "syncSecret", err, "secret "+missing.String()+" not found: the chart creates it (helm upgrade re-creates it)")
		var s corev1.Secret
		if err := store.Get(context.Background(), missing, &s); !apierrors.IsNotFound(err) {
			t.Errorf("%s after syncSecret: %v, want still not found", missing, err)
		}
	}
}

// TestSyncSecretFirstRace: both replicas find the two Secrets empty; B
// stores its CA and certificate between A's read and A's update of the
// CA's Secret; A's update conflicts, A re-reads and adopts B's.
func TestSyncSecretFirstRace(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	store := chartSecrets()
	b := replica(store, clk)
	var bData map[string][]byte
	raced := false
	a := replica(interceptor.NewClient(store, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if !raced {
				raced = true
				var err error
				if bData, _, err = b.syncSecret(ctx, publishedAll); err != nil {
					t.Fatalf("replica B: %v", err)
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	}), clk)
	aData, _, err := a.syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	if !raced || !sameData(aData, bData) {
		t.Errorf("raced %v; replica A uses other certificates than replica B, which stored them first", raced)
	}
	if !sameData(joined(getSecret(t, store, caSecretKey), getSecret(t, store, secretKey)), bData) {
		t.Error("the Secrets do not hold replica B's certificates")
	}
}

// TestSyncSecretUpdateRace: both replicas find the serving certificate due;
// B renews first, A's update conflicts, A re-reads and renews nothing more.
func TestSyncSecretUpdateRace(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	store := chartSecrets()
	b := replica(store, clk)
	first, _, err := b.syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	clk.SetTime(renewalTime(parseStored(first).serving.cert))

	var bData map[string][]byte
	updates := 0
	a := replica(interceptor.NewClient(store, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			if updates == 1 {
				if bData, _, err = b.syncSecret(ctx, publishedAll); err != nil {
					t.Fatalf("replica B: %v", err)
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	}), clk)
	aData, _, err := a.syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	if updates != 1 {
		t.Errorf("replica A updated %d times, want 1 (conflict, then nothing left to do)", updates)
	}
	if sameData(bData, first) || !sameData(aData, bData) {
		t.Error("replica A does not use replica B's renewal")
	}
}

func TestSyncSecretGivesUpAfterRaces(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	a := replica(interceptor.NewClient(chartSecrets(), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, obj.GetName(), nil)
		},
	}), clk)
	_, _, err := a.syncSecret(ctx, publishedAll)
	checkErr(t, "syncSecret", err, "writing secrets webhook-signer and webhook-serving: lost 5 races with other replicas in a row")
}

// TestSyncSecretMovesThePreviousLayout: upgraded from a release that kept
// everything in one Secret, the first round moves its CA and serving
// certificate, unchanged, into the two (the API servers already trust
// that CA, and replicas of the old release serve that certificate), then
// deletes it: the CA key is kept in one place. Unusable contents are left
// alone, and an empty Secret of the previous layout is not looked for
// again.
func TestSyncSecretMovesThePreviousLayout(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	old, _, err := replica(chartSecrets(), clk).syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: legacyKey.Namespace, Name: legacyKey.Name}, Type: corev1.SecretTypeTLS, Data: old}

	store := chartSecrets(legacy)
	data, d, err := replica(store, clk).syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	if !sameData(data, old) || d.newCA != "" || d.newServing != "" {
		t.Errorf("moved certificates differ from the previous layout's (new CA %q, new serving %q)", d.newCA, d.newServing)
	}
	if !sameData(joined(getSecret(t, store, caSecretKey), getSecret(t, store, secretKey)), old) {
		t.Error("the two Secrets do not hold the previous layout's certificates")
	}
	if err := store.Get(ctx, legacyKey, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the previous layout's Secret after the move: %v, want deleted", err)
	}

	// Unusable: a fresh CA is issued, the Secret is left for a person.
	broken := legacy.DeepCopy()
	broken.Data = map[string][]byte{keyTLSCert: []byte("not PEM")}
	store = chartSecrets(broken)
	data, _, err = replica(store, clk).syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	if sameData(data, old) || parseStored(data).signerErr != nil {
		t.Error("an unusable Secret of the previous layout was moved")
	}
	if err := store.Get(ctx, legacyKey, &corev1.Secret{}); err != nil {
		t.Errorf("an unusable Secret of the previous layout: %v, want left alone", err)
	}
}
