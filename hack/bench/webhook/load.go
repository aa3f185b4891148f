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

package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// target is one webhook server process under load.
type target struct {
	name   string
	url    string
	base   string
	client *http.Client
	cmd    *exec.Cmd
}

func newTarget(name string, port int, ca *x509.CertPool, cmd *exec.Cmd) *target {
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	return &target{
		name: name, url: base + "/" + name, base: base, cmd: cmd,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// As the API server calls webhooks: TLS, HTTP/1.1, kept-alive connections.
			TLSClientConfig:     &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12},
			MaxConnsPerHost:     32,
			MaxIdleConnsPerHost: 32,
			DisableCompression:  true,
		}},
	}
}

// cpu is the CPU time the server process has used.
func (t *target) cpu() (time.Duration, error) {
	resp, err := t.client.Get(t.base + "/cpu")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(string(b), 10, 64)
	return time.Duration(ns), err
}

// review sends one AdmissionReview and fails unless it is answered 200.
func (t *target) review(body []byte) error {
	resp, err := t.client.Post(t.url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", t.name, resp.StatusCode)
	}
	return nil
}

// check sends one review and returns the response's allowed flag and patch size.
func (t *target) check(body []byte) (allowed bool, patch int, err error) {
	resp, err := t.client.Post(t.url, "application/json", bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	var ar admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&ar); err != nil || ar.Response == nil {
		return false, 0, fmt.Errorf("%s: no AdmissionReview response: %v", t.name, err)
	}
	return ar.Response.Allowed, len(ar.Response.Patch), nil
}

// saturate sends reviews back to back from conns connections for d.
func (t *target) saturate(body []byte, conns int, d time.Duration) (int64, time.Duration, error) {
	var n atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := t.review(body); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	return n.Load(), time.Since(start), nil
}

// paced sends rate reviews per second for d, each at its scheduled time
// whatever the previous ones are doing (open loop), and returns each one's
// latency counted from its scheduled time, so a stalled server is not
// hidden by sending less.
func (t *target) paced(body []byte, rate int, d time.Duration) ([]time.Duration, error) {
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, total)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for i := range total {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Go(func() {
			if err := t.review(body); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			lat[i] = time.Since(at)
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	slices.Sort(lat)
	return lat, nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
