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
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/meshinit/meshinit/internal/testkit"
)

func pairFiles(kp *keyPair) map[string][]byte {
	return map[string][]byte{keyTLSCert: kp.certPEM, keyTLSKey: kp.keyPEM}
}

func TestWriteCertDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "serving-certs")
	ca := mustCA(t, t0, caLife)
	first := mustServing(t, ca, []string{"a"}, t0, servLife)
	second := mustServing(t, ca, []string{"a"}, t0, servLife)

	if err := writeCertDir(dir, pairFiles(first)); err != nil {
		t.Fatal(err)
	}
	assertDir(t, dir, pairFiles(first))
	gen, _ := os.Readlink(filepath.Join(dir, dataLink))

	// Unchanged content: no new generation.
	if err := writeCertDir(dir, pairFiles(first)); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, dataLink)); again != gen {
		t.Errorf("rewrote unchanged content: ..data %s -> %s", gen, again)
	}

	// A leftover from a crash is cleaned up with the previous generation.
	if err := os.Mkdir(filepath.Join(dir, genPrefix+"crashed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeCertDir(dir, pairFiles(second)); err != nil {
		t.Fatal(err)
	}
	assertDir(t, dir, pairFiles(second))
	gens, _ := filepath.Glob(filepath.Join(dir, genPrefix+"*"))
	if len(gens) != 1 {
		t.Errorf("generations left: %v, want only the current one", gens)
	}
	for name := range pairFiles(second) {
		if link, err := os.Readlink(filepath.Join(dir, name)); err != nil || link != filepath.Join(dataLink, name) {
			t.Errorf("%s links to %q (%v), want %s", name, link, err, filepath.Join(dataLink, name))
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, keyTLSKey)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode %v (%v), want 0600", fi.Mode(), err)
	}
}

func TestWriteCertDirReplacesPlainFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, keyTLSCert), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	kp := mustServing(t, mustCA(t, t0, caLife), []string{"a"}, t0, servLife)
	if err := writeCertDir(dir, pairFiles(kp)); err != nil {
		t.Fatal(err)
	}
	assertDir(t, dir, pairFiles(kp))
}

func assertDir(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v, content differs: %v", name, err, !bytes.Equal(got, data))
		}
	}
}

// TestCertwatcherFollowsGenerations: controller-runtime's certwatcher, as
// the webhook server uses it, serves each generation writeCertDir makes.
func TestCertwatcherFollowsGenerations(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, time.Now(), caLife)
	kp := mustServing(t, ca, []string{"a"}, time.Now(), servLife)
	if err := writeCertDir(dir, pairFiles(kp)); err != nil {
		t.Fatal(err)
	}
	cw, err := certwatcher.New(filepath.Join(dir, keyTLSCert), filepath.Join(dir, keyTLSKey))
	if err != nil {
		t.Fatal(err)
	}
	cw = cw.WithWatchInterval(time.Hour) // only fsnotify events, no polling
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cw.Start(ctx) }()
	time.Sleep(200 * time.Millisecond) // Start adds its fsnotify watches

	for i := range 3 {
		kp := mustServing(t, ca, []string{"a"}, time.Now(), servLife)
		if err := writeCertDir(dir, pairFiles(kp)); err != nil {
			t.Fatal(err)
		}
		want, err := tls.X509KeyPair(kp.certPEM, kp.keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, fmt.Sprintf("generation %d served", i), func() error {
			if got, _ := cw.GetCertificate(nil); got == nil || !bytes.Equal(got.Certificate[0], want.Certificate[0]) {
				return errors.New("certwatcher still serves the previous certificate")
			}
			return nil
		})
	}
}

func TestCheckCertDir(t *testing.T) {
	ca := mustCA(t, t0, caLife)
	kp := mustServing(t, ca, []string{"a"}, t0, servLife)
	write := func(files map[string][]byte) string {
		dir := t.TempDir()
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		now   time.Time
		want  string
	}{
		{"valid", pairFiles(kp), t0, ""},
		{"missing", nil, t0, "no such file"},
		{"mismatched key", map[string][]byte{keyTLSCert: kp.certPEM, keyTLSKey: ca.keyPEM}, t0, "private key does not match"},
		{"expired", pairFiles(kp), kp.cert.NotAfter, "is valid from"},
		{"not yet valid", pairFiles(kp), t0.Add(-time.Hour), "is valid from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCertDir(write(tc.files), tc.now)
			checkErr(t, "checkCertDir", err, tc.want)
			if err != nil && !strings.Contains(err.Error(), "tls.crt") {
				t.Errorf("error %q does not name tls.crt", err)
			}
		})
	}
}
