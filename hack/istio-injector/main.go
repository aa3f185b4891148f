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

// Command istio-injector serves Istio's sidecar injection webhook: the real
// code of istio.io/istio/pkg/kube/inject (the webhook istiod serves at
// /inject), configured from the files istiod mounts from its
// istio-sidecar-injector ConfigMap (config, values) and from the mesh
// configuration of its istio ConfigMap, as pilot/pkg/bootstrap's
// initSidecarInjector wires it, over TLS with the certificate given. It is
// istiod's injector without the rest of istiod (no xDS, no CA, no cluster
// client): meshinit's end-to-end test of composing with Istio
// (e2e/istio_test.go) runs it on the host, registered with the
// MutatingWebhookConfiguration Istio's own chart renders.
//
// Istio's environment settings apply as in istiod: ENABLE_NATIVE_SIDECARS
// (true: native sidecars, false: classic ones; auto, the default, reads the
// nodes, which this injector does not, and so means classic).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/kube/inject"
	"istio.io/istio/pkg/kube/multicluster"
)

func main() {
	config := flag.String("config", "", "the injection config: the istio-sidecar-injector ConfigMap's config key")
	values := flag.String("values", "", "the injection values: the istio-sidecar-injector ConfigMap's values key")
	meshFile := flag.String("mesh", "", "the mesh configuration (the istio ConfigMap's mesh key); empty: Istio's defaults")
	listen := flag.String("listen", "127.0.0.1:15017", "address to serve HTTPS on")
	cert := flag.String("cert", "", "serving certificate (PEM)")
	key := flag.String("key", "", "serving certificate's key (PEM)")
	revision := flag.String("revision", "", "the istio.io/rev this injector serves")
	flag.Parse()
	if err := run(*config, *values, *meshFile, *listen, *cert, *key, *revision); err != nil {
		log.Fatalf("istio-injector: %v", err)
	}
}

func run(config, values, meshFile, listen, cert, key, revision string) error {
	if config == "" || values == "" || cert == "" || key == "" {
		return errors.New("-config, -values, -cert and -key are required")
	}
	meshConfig := mesh.DefaultMeshConfig()
	if meshFile != "" {
		b, err := os.ReadFile(meshFile)
		if err != nil {
			return err
		}
		if meshConfig, err = mesh.ApplyMeshConfigDefaults(string(b)); err != nil {
			return fmt.Errorf("mesh configuration %s: %w", meshFile, err)
		}
	}
	watcher, err := inject.NewFileWatcher(config, values)
	if err != nil {
		return err
	}
	env := &model.Environment{Watcher: meshwatcher.NewTestWatcher(meshConfig)}
	mux := http.NewServeMux()
	wh, err := inject.NewWebhook(inject.WebhookParameters{
		Watcher:  watcher,
		Env:      env,
		Mux:      mux,
		Revision: revision,
		// No remote clusters, and no node informer: native sidecars
		// follow ENABLE_NATIVE_SIDECARS (true or false).
		MultiCluster: multicluster.NewFakeController(),
	})
	if err != nil {
		return fmt.Errorf("creating the injection webhook: %w", err)
	}
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	stop := make(chan struct{})
	wh.Run(stop)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	log.Printf("istio-injector: serving Istio's injection webhook on https://%s/inject", l.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	go func() {
		<-ctx.Done()
		close(stop)
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ServeTLS(l, cert, key); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
