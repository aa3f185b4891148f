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
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// dataLink is the symlink in the cert dir naming the current generation of
// files, as in a Secret volume the kubelet projects.
const dataLink = "..data"

// genPrefix starts the name of each generation's directory.
const genPrefix = "..gen-"

// writeCertDir makes files the content of dir atomically, all at once: they
// are written into a fresh hidden directory, then the ..data symlink is
// renamed onto it; each name in dir is a symlink through ..data. A reader
// (controller-runtime's certwatcher) never sees a certificate next to the
// wrong key. Unchanged content is left alone.
func writeCertDir(dir string, files map[string][]byte) error {
	if same, err := dirHolds(dir, files); err != nil || same {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating cert dir: %w", err)
	}
	gen, err := os.MkdirTemp(dir, genPrefix+"*")
	if err != nil {
		return fmt.Errorf("creating cert dir generation: %w", err)
	}
	for name, data := range files {
		mode := os.FileMode(0o644)
		if name == keyTLSKey {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(gen, name), data, mode); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if err := replaceSymlink(filepath.Join(dir, dataLink), filepath.Base(gen)); err != nil {
		return err
	}
	for name := range files {
		target := filepath.Join(dataLink, name)
		if cur, _ := os.Readlink(filepath.Join(dir, name)); cur != target {
			if err := replaceSymlink(filepath.Join(dir, name), target); err != nil {
				return err
			}
		}
	}
	// Earlier generations, including any a crash left behind.
	stale, _ := filepath.Glob(filepath.Join(dir, genPrefix+"*"))
	for _, path := range stale {
		if path != gen {
			if err := os.RemoveAll(path); err != nil {
				return fmt.Errorf("removing previous cert dir generation: %w", err)
			}
		}
	}
	return nil
}

// replaceSymlink points link at target in one rename.
func replaceSymlink(link, target string) error {
	tmp := link + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", tmp, err)
	}
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmp, link, err)
	}
	return nil
}

// dirHolds reports whether every file in dir has exactly the given content.
func dirHolds(dir string, files map[string][]byte) (bool, error) {
	for name, data := range files {
		cur, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", filepath.Join(dir, name), err)
		}
		if !bytes.Equal(cur, data) {
			return false, nil
		}
	}
	return true, nil
}

// checkCertDir reports whether dir serves a usable certificate at now: its
// tls.crt and tls.key load as a pair and the certificate is valid.
func checkCertDir(dir string, now time.Time) error {
	_, err := servedCert(dir, now)
	return err
}

// servedCert is the certificate dir serves, if usable at now (see
// checkCertDir).
func servedCert(dir string, now time.Time) (*x509.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, keyTLSCert), filepath.Join(dir, keyTLSKey)
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("loading %s and %s: %w", certPath, keyPath, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", certPath, err)
	}
	if now.Before(cert.NotBefore) || !now.Before(cert.NotAfter) {
		return nil, fmt.Errorf("%s is valid from %s to %s, not now (%s)", certPath,
			cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return cert, nil
}
