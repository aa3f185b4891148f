package certs

import (
	"context"
	"errors"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// selfManaged is ModeSelfManaged: the certificates live in one Secret shared
// by all replicas, every one of which runs the same loop.
type selfManaged struct {
	opts     Options
	client   client.WithWatch
	dnsNames []string
}

// setup does one round and succeeds once the cert dir is usable; a caBundle
// that could not be written yet is retried by run.
func (m *selfManaged) setup(ctx context.Context) error {
	_, err := m.reconcile(ctx)
	if dirErr := checkCertDir(m.opts.CertDir, m.opts.Clock.Now()); dirErr != nil {
		return errors.Join(err, dirErr)
	}
	if err != nil {
		m.opts.Log.Error(err, "certificates are in place; retrying the rest")
	}
	return nil
}

// run reconciles until ctx ends: when the Secret or the webhook configuration
// changes, when a certificate is due, at least every ResyncPeriod, and with
// backoff after an error.
func (m *selfManaged) run(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	var watches sync.WaitGroup
	defer watches.Wait()
	watches.Go(func() {
		m.watch(ctx, &corev1.SecretList{}, client.InNamespace(m.opts.ServiceNamespace), m.opts.SecretName, changed)
	})
	if m.opts.WebhookConfigName != "" {
		watches.Go(func() {
			m.watch(ctx, &admissionregistrationv1.MutatingWebhookConfigurationList{}, nil, m.opts.WebhookConfigName, changed)
		})
	}
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 32, Cap: m.opts.ResyncPeriod}
	}
	backoff := newBackoff()
	for {
		next, err := m.reconcile(ctx)
		if ctx.Err() != nil {
			return nil
		}
		sleep := m.opts.ResyncPeriod
		if err != nil {
			m.opts.Log.Error(err, "keeping certificates")
			sleep = backoff.Step()
		} else {
			backoff = newBackoff()
			if !next.IsZero() {
				sleep = min(sleep, next.Sub(m.opts.Clock.Now()))
			}
		}
		timer := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// reconcile runs one round: read the webhook configuration (whose caBundle
// tells which CAs are published), bring the Secret in line, publish its
// caBundle, write the cert dir. It returns when the next certificate is due.
func (m *selfManaged) reconcile(ctx context.Context) (time.Time, error) {
	cfg, err := m.getWebhookConfig(ctx)
	if err != nil {
		return time.Time{}, err
	}
	data, d, err := m.syncSecret(ctx, publishedIn(m.opts.WebhookConfigName, cfg))
	if err != nil {
		return time.Time{}, err
	}
	if d.waiting != "" {
		m.opts.Log.Info("serving certificate renewal waits", "reason", d.waiting)
	}
	// Trust first, then serve: the caBundle holds the CA before the cert dir
	// serves anything it signed.
	pubErr := m.publishCABundle(ctx, data[keyCACert])
	dirErr := writeCertDir(m.opts.CertDir, map[string][]byte{
		keyTLSCert: data[keyTLSCert],
		keyTLSKey:  data[keyTLSKey],
		keyCACert:  data[keyCACert],
	})
	return d.recheck, errors.Join(pubErr, dirErr)
}

// watch signals changed whenever the object name of list's kind changes,
// re-watching until ctx ends. Failing to watch (say, RBAC without the watch
// verb) only delays reactions to the next resync.
func (m *selfManaged) watch(ctx context.Context, list client.ObjectList, ns client.ListOption, name string, changed chan<- struct{}) {
	opts := []client.ListOption{client.MatchingFields{"metadata.name": name}}
	if ns != nil {
		opts = append(opts, ns)
	}
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		w, err := m.client.Watch(ctx, list, opts...)
		if err != nil {
			m.opts.Log.V(1).Info("cannot watch; relying on resync", "name", name, "error", err.Error())
			return
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				return
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}, 5*time.Second, 0.2, true)
}
