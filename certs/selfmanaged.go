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
	"slices"
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
	// seen: when this replica first saw each published CA. Only reconcile
	// uses it, and reconciles never overlap.
	seen sightings
	// legacyGone: the Secret of the previous layout is known to be gone.
	legacyGone bool
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
	for _, name := range []string{m.opts.SecretName, m.opts.CASecretName} {
		watches.Go(func() {
			m.watch(ctx, &corev1.SecretList{}, client.InNamespace(m.opts.ServiceNamespace), name, changed)
		})
	}
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
// tells which CAs are published), bring the Secret in line, publish its CAs
// (keeping those already published; see handover.go), then hand the cert
// dir over to the Secret's serving certificate once its CA is trusted. It
// returns when the next decision is due.
func (m *selfManaged) reconcile(ctx context.Context) (time.Time, error) {
	cfg, err := m.getWebhookConfig(ctx)
	if err != nil {
		return time.Time{}, err
	}
	now := m.opts.Clock.Now()
	inEvery, _ := caBundleCAs(cfg)
	m.seen = m.seen.observe(inEvery, now)
	data, d, err := m.syncSecret(ctx, publishedIn(m.opts.WebhookConfigName, cfg))
	if err != nil {
		return time.Time{}, err
	}
	if d.waiting != "" {
		m.opts.Log.Info("serving certificate renewal waits", "reason", d.waiting)
	}
	s := parseStored(data)
	retire := orphansRetireAt(s.serving.cert, inEvery, m.seen, m.opts.PropagationDelay, m.opts.ResyncPeriod)

	// Trust first, then serve: the caBundle holds the CA before the cert dir
	// serves anything it signed.
	published, pubErr := m.publishCABundle(ctx, s.trusted, now, retire)
	if pubErr != nil {
		published = inEvery // as read: what the API servers may trust
	}
	m.seen = m.seen.observe(published, now)
	h := handover{now: true}
	if m.opts.WebhookConfigName != "" {
		current, _ := servedCert(m.opts.CertDir, now)
		if current != nil && !slices.Equal(current.DNSNames, m.dnsNames) {
			current = nil
		}
		h = decideHandover(current, s.serving.cert, published, m.seen, now, m.opts.PropagationDelay)
	}
	var dirErr error
	if h.now {
		dirErr = writeCertDir(m.opts.CertDir, map[string][]byte{
			keyTLSCert: data[keyTLSCert],
			keyTLSKey:  data[keyTLSKey],
			keyCACert:  data[keyCACert],
		})
	} else {
		m.opts.Log.Info("keeping the served certificate", "reason", h.waiting)
	}
	return earliestAfter(now, d.recheck, h.recheck, retire), errors.Join(pubErr, dirErr)
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
