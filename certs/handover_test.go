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
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestSightings(t *testing.T) {
	a, b, c := mustCA(t, t0, caLife), mustCA(t, t0, caLife), mustCA(t, t0, caLife)
	var seen sightings
	seen = seen.observe([]*x509.Certificate{a.cert, b.cert}, t0)
	seen = seen.observe([]*x509.Certificate{b.cert, c.cert}, t0.Add(time.Hour))
	if len(seen) != 2 {
		t.Errorf("%d CAs remembered, want 2 (a is no longer published)", len(seen))
	}
	for _, tc := range []struct {
		name string
		ca   *keyPair
		want time.Time
	}{{"b, seen first at t0", b, t0}, {"c, seen an hour later", c, t0.Add(time.Hour)}} {
		got, ok := seen.issuerSeen(mustServing(t, tc.ca, []string{"svc"}, t0, servLife).cert, []*x509.Certificate{b.cert, c.cert})
		if !ok || !got.Equal(tc.want) {
			t.Errorf("%s: issuerSeen = %s, %v; want %s", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := seen.issuerSeen(mustServing(t, a, []string{"svc"}, t0, servLife).cert, []*x509.Certificate{b.cert, c.cert}); ok {
		t.Error("a certificate of a CA no longer published has a sighting")
	}
}

func TestDecideHandover(t *testing.T) {
	names := []string{"svc"}
	old, fresh, unpublished := mustCA(t, t0, caLife), mustCA(t, t0.Add(day), caLife), mustCA(t, t0.Add(day), caLife)
	current := mustServing(t, old, names, t0, servLife).cert
	renewed := mustServing(t, old, names, t0.Add(day), servLife).cert
	fromFresh := mustServing(t, fresh, names, t0.Add(day), servLife).cert
	fromUnpublished := mustServing(t, unpublished, names, t0.Add(day), servLife).cert

	published := []*x509.Certificate{fresh.cert, old.cert}
	seenAt := t0.Add(day + time.Minute)
	seen := sightings{}.observe([]*x509.Certificate{old.cert}, t0).observe(published, seenAt)
	for _, tc := range []struct {
		name          string
		current, next *x509.Certificate
		published     []*x509.Certificate
		now           time.Time
		wantNow       bool
		wantWaiting   string
		wantRecheck   time.Time
	}{
		{"nothing served yet", nil, fromUnpublished, nil, seenAt, true, "", time.Time{}},
		{"the same certificate", current, current, published, seenAt, true, "", time.Time{}},
		{"a renewal by the same CA", current, renewed, published, seenAt, true, "", time.Time{}},
		{"served CA no longer trusted", current, fromUnpublished, []*x509.Certificate{fresh.cert}, seenAt, true, "", time.Time{}},
		{"new CA not in the caBundle", current, fromUnpublished, published, seenAt, false, "does not hold the CA", time.Time{}},
		{"new CA propagating", current, fromFresh, published, seenAt.Add(delay - time.Second), false, "propagates until", seenAt.Add(delay)},
		{"new CA propagated", current, fromFresh, published, seenAt.Add(delay), true, "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideHandover(tc.current, tc.next, tc.published, seen, tc.now, delay)
			if got.now != tc.wantNow || !got.recheck.Equal(tc.wantRecheck) || (tc.wantWaiting == "") != (got.waiting == "") || !strings.Contains(got.waiting, tc.wantWaiting) {
				t.Errorf("decideHandover = %+v, want now %v, waiting %q, recheck %s", got, tc.wantNow, tc.wantWaiting, tc.wantRecheck)
			}
		})
	}
}

func TestBundleFor(t *testing.T) {
	signer, older, orphan := mustCA(t, t0.Add(day), caLife), mustCA(t, t0, caLife), mustCA(t, t0, caLife)
	expired := mustCA(t, t0.Add(-caLife), caLife)
	leaf := mustServing(t, orphan, []string{"svc"}, t0, servLife)
	secretCAs := []*x509.Certificate{signer.cert, older.cert}
	published := []*x509.Certificate{older.cert, orphan.cert, expired.cert, leaf.cert}
	retire := t0.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		now    time.Time
		retire time.Time
		want   []*x509.Certificate
	}{
		{"orphans kept", t0, retire, []*x509.Certificate{signer.cert, older.cert, orphan.cert}},
		{"orphans kept without a retirement time", t0.Add(day), time.Time{}, []*x509.Certificate{signer.cert, older.cert, orphan.cert}},
		{"orphans retired", retire, retire, secretCAs},
	} {
		got := bundleFor(secretCAs, published, tc.now, tc.retire)
		if !slices.EqualFunc(got, tc.want, (*x509.Certificate).Equal) {
			t.Errorf("%s: bundle of %d CAs, want %d: %v", tc.name, len(got), len(tc.want), commonNames(got))
		}
	}
}

func TestOrphansRetireAt(t *testing.T) {
	ca := mustCA(t, t0, caLife)
	serving := mustServing(t, ca, []string{"svc"}, t0, servLife).cert
	seen := sightings{}.observe([]*x509.Certificate{ca.cert}, t0.Add(time.Minute))
	if got := orphansRetireAt(serving, nil, seen, delay, time.Minute); !got.IsZero() {
		t.Errorf("retire at %s while the serving certificate's CA is not published, want never", got)
	}
	if got, want := orphansRetireAt(serving, []*x509.Certificate{ca.cert}, seen, delay, time.Minute), t0.Add(2*time.Minute+2*delay); !got.Equal(want) {
		t.Errorf("retire at %s, want %s (seen + 2 delays + resync)", got, want)
	}
}

func commonNames(cs []*x509.Certificate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Subject.CommonName)
	}
	return out
}

// TestReconcileSecretReplaced walks one replica's reconcile through the
// Secrets being deleted (the replica keeps serving its certificate, and
// creates none) and re-created empty by helm upgrade, with a fake clock:
// the new certificate is served only once its CA has been in the caBundle
// (of every webhook) for the propagation delay, never while patching the
// caBundle fails; the old CA stays in the caBundle until it retires.
func TestReconcileSecretReplaced(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "meshinit"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "a"}, {Name: "b"}},
	}
	store := chartSecrets(cfg)
	patchFails := false
	r := replica(interceptor.NewClient(store, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patchFails {
				return errors.New("the API server is away")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}), clk)
	r.opts.WebhookConfigName, r.opts.CertDir, r.opts.ResyncPeriod = "meshinit", t.TempDir(), time.Minute

	served := func() *x509.Certificate {
		t.Helper()
		cert, err := servedCert(r.opts.CertDir, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	bundle := func() []*x509.Certificate {
		t.Helper()
		var got admissionregistrationv1.MutatingWebhookConfiguration
		if err := store.Get(ctx, client.ObjectKeyFromObject(cfg), &got); err != nil {
			t.Fatal(err)
		}
		inEvery, inAny := caBundleCAs(&got)
		if len(inEvery) != len(inAny) {
			t.Fatalf("the webhooks' caBundles differ: %d CAs in every one, %d in any", len(inEvery), len(inAny))
		}
		return inEvery
	}
	step := func(after time.Duration, wantErr string) time.Time {
		t.Helper()
		clk.SetTime(clk.Now().Add(after))
		next, err := r.reconcile(ctx)
		checkErr(t, "reconcile", err, wantErr)
		return next
	}

	step(0, "")
	old := served()
	if b := bundle(); len(b) != 1 || old.CheckSignatureFrom(b[0]) != nil {
		t.Fatalf("installed: caBundle of %d CAs does not hold the served certificate's", len(b))
	}

	for _, k := range []client.ObjectKey{secretKey, caSecretKey} {
		if err := store.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	step(time.Minute, "secret ns/webhook-signer not found: the chart creates it")
	if !served().Equal(old) || len(bundle()) != 1 {
		t.Fatal("with the Secrets gone, the served certificate or the caBundle changed")
	}
	for _, k := range []client.ObjectKey{secretKey, caSecretKey} {
		if err := store.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}, Type: corev1.SecretTypeOpaque}); err != nil {
			t.Fatal(err)
		}
	}
	patchFails = true
	step(time.Minute, "the API server is away")
	if !served().Equal(old) || len(bundle()) != 1 {
		t.Fatal("the re-created Secret's certificate is served though its CA could not be published")
	}

	patchFails = false
	recheck := step(time.Minute, "")
	published := clk.Now()
	if !served().Equal(old) || len(bundle()) != 2 {
		t.Fatalf("caBundle of %d CAs; the new certificate is served before its CA propagated", len(bundle()))
	}
	if propagated := published.Add(delay); recheck.After(propagated) {
		t.Errorf("next reconcile at %s, after the new CA propagated at %s", recheck, propagated)
	}

	at := func(when time.Time, wantNew bool, wantCAs int) time.Time {
		t.Helper()
		recheck := step(when.Sub(clk.Now()), "")
		if gotNew := !served().Equal(old); gotNew != wantNew || len(bundle()) != wantCAs {
			t.Fatalf("%s after publishing: serving the new certificate %v, caBundle of %d CAs; want %v, %d", when.Sub(published), gotNew, len(bundle()), wantNew, wantCAs)
		}
		return recheck
	}
	at(published.Add(delay-time.Second), false, 2)
	recheck = at(published.Add(delay), true, 2)
	retire := published.Add(2*delay + time.Minute)
	if recheck.After(retire) {
		t.Errorf("next reconcile at %s, after the old CA retires at %s", recheck, retire)
	}
	at(retire.Add(-time.Second), true, 2)
	at(retire, true, 1)
	if b := bundle(); served().CheckSignatureFrom(b[0]) != nil {
		t.Error("the CA left in the caBundle did not sign the served certificate")
	}
}
