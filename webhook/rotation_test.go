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

package webhook_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/internal/testkit"
)

// testRotation serves certificates from files, replaces the serving
// certificate while pods are being created, and checks that the new one is
// served without a restart and that no review failed.
func testRotation(t *testing.T, c *cluster, mwcName string) {
	ctx := context.Background()
	mwcs := c.admin.AdmissionregistrationV1().MutatingWebhookConfigurations()
	dir := t.TempDir()
	ca := newCA(t)
	first := ca.issue(t, dir)
	port := testkit.FreePort(t)
	cfg := c.webhookConfig(t, fmt.Sprintf("https://localhost:%d", port))
	cfg.ResourceVersion = ""
	current, err := mwcs.Get(ctx, mwcName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ResourceVersion = current.ResourceVersion
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig.CABundle = ca.CertPEM()
	}
	if _, err := mwcs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.serve(t, port, certs.Options{Mode: certs.ModeFiles, CertDir: dir}, time.Second)
	if serial, _ := servedSerial(port); serial != first {
		t.Fatalf("serving %s, want the first certificate %s", serial, first)
	}

	var reviews, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := testPod(fmt.Sprintf("rotation-%d-%d", w, i), nil, nil)
				got, err := c.admin.CoreV1().Pods("enabled").Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				reviews.Add(1)
				if err == nil && len(got.Spec.InitContainers) != 2 {
					err = fmt.Errorf("pod not injected: %q", initContainerNames(got))
				}
				if err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	time.Sleep(time.Second)
	second := ca.issue(t, dir)
	testkit.Eventually(t, 30*time.Second, "the rotated certificate served", func() error {
		if serial, err := servedSerial(port); err != nil || serial != second {
			return fmt.Errorf("serving %s (%v), want %s", serial, err, second)
		}
		return nil
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d reviews during the rotation, %d failed", reviews.Load(), failures.Load())
	if failures.Load() > 0 || reviews.Load() < 10 {
		t.Errorf("%d of %d reviews failed (first: %v)", failures.Load(), reviews.Load(), firstFailure.Load())
	}
}
