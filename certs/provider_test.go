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
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ manager.LeaderElectionRunnable = (*Provider)(nil)

func TestNew(t *testing.T) {
	if _, err := New(nil, Options{SecretName: "s", CASecretName: "ca", ServiceName: "svc", ServiceNamespace: "ns"}); err == nil || err.Error() != "--cert-mode=self-managed needs access to the API server" {
		t.Errorf("self-managed without a rest config: %v", err)
	}
	if _, err := New(nil, Options{Mode: "bogus"}); err == nil {
		t.Error("New accepted an unknown mode")
	}
	p, err := New(nil, Options{Mode: ModeFiles})
	if err != nil {
		t.Fatal(err)
	}
	if p.NeedLeaderElection() {
		t.Error("the Provider needs leader election; every replica must run it")
	}
	if p.CertDir() == "" {
		t.Error("no default cert dir")
	}
}

// TestFilesMode: Setup waits for the files someone else provides, up to the
// startup timeout, and names them when they do not come.
func TestFilesMode(t *testing.T) {
	dir := t.TempDir()
	p, err := New(nil, Options{Mode: ModeFiles, CertDir: dir, StartupTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkErr(t, "Setup without files", p.Setup(context.Background()), "certificates not usable after 1.5s (--cert-startup-timeout): loading "+dir+"/tls.crt and "+dir+"/tls.key")
	checkErr(t, "ReadyCheck without files", p.ReadyCheck(nil), "no such file")

	kp := mustServing(t, mustCA(t, time.Now(), time.Hour), []string{"a"}, time.Now(), time.Hour)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = writeCertDir(dir, pairFiles(kp))
	}()
	if err := p.Setup(context.Background()); err != nil {
		t.Errorf("Setup once the files arrive: %v", err)
	}
	if err := p.ReadyCheck(nil); err != nil {
		t.Errorf("ReadyCheck: %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Errorf("Start: %v", err)
	}
}
