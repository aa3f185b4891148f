package certs

import (
	"context"
	"crypto/x509"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var secretKey = client.ObjectKey{Namespace: "ns", Name: "webhook-tls"}

func replica(c client.WithWatch, clk *clocktesting.FakePassiveClock) *selfManaged {
	o := Options{SecretName: secretKey.Name, ServiceName: "svc", ServiceNamespace: secretKey.Namespace, Clock: clk,
		CAValidity: caLife, ServingValidity: servLife, PropagationDelay: delay}
	o.setDefaults()
	return &selfManaged{opts: o, client: c, dnsNames: DNSNames("svc", "ns")}
}

func publishedAll(*x509.Certificate) bool { return true }

// TestSyncSecretCreateRace: replica B creates the Secret between replica A's
// read (not found) and create; A gets AlreadyExists and adopts B's.
func TestSyncSecretCreateRace(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	store := fake.NewClientBuilder().WithScheme(scheme).Build()
	b := replica(store, clk)
	var bData map[string][]byte
	raced := false
	a := replica(interceptor.NewClient(store, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if !raced {
				raced = true
				var err error
				if bData, _, err = b.syncSecret(ctx, publishedAll); err != nil {
					t.Fatalf("replica B: %v", err)
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}), clk)

	aData, _, err := a.syncSecret(ctx, publishedAll)
	if err != nil {
		t.Fatal(err)
	}
	if !raced || !sameData(aData, bData) {
		t.Errorf("raced %v; replica A uses other certificates than replica B, which created the Secret", raced)
	}
	var secret corev1.Secret
	if err := store.Get(ctx, secretKey, &secret); err != nil {
		t.Fatal(err)
	}
	if !sameData(secret.Data, bData) || secret.Type != corev1.SecretTypeTLS || secret.Labels["app.kubernetes.io/component"] != "webhook-certs" {
		t.Errorf("stored Secret (type %s, labels %v) is not replica B's", secret.Type, secret.Labels)
	}
}

// TestSyncSecretUpdateRace: both replicas find the serving certificate due;
// B renews first, A's update conflicts, A re-reads and renews nothing more.
func TestSyncSecretUpdateRace(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(t0)
	store := fake.NewClientBuilder().WithScheme(scheme).Build()
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
	store := fake.NewClientBuilder().WithScheme(scheme).Build()
	a := replica(interceptor.NewClient(store, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, obj.GetName())
		},
	}), clk)
	_, _, err := a.syncSecret(ctx, publishedAll)
	checkErr(t, "syncSecret", err, "writing secret ns/webhook-tls: lost 5 races with other replicas in a row")
}
