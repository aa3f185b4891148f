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
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// The two servers compared: meshinit's handler, and a handler that only
// answers "allowed". Both run in controller-runtime's webhook server with
// meshinit's TLS settings (TLS 1.2 minimum, HTTP/1.1).
const (
	serverMeshinit = "meshinit"
	serverNoop     = "noop"
)

// serve runs one webhook server until SIGTERM; it is the child process the
// benchmark measures.
func serve(kind string, port int, certDir string) error {
	// Logs are formatted as in production (JSON, info) but discarded.
	log := logr.FromSlogHandler(slog.NewJSONHandler(io.Discard, nil))
	ctrl.SetLogger(log)
	var handler admission.Handler
	switch kind {
	case serverMeshinit:
		config, err := chartConfig()
		if err != nil {
			return err
		}
		handler = webhook.NewHandler(config, func(context.Context, string) (map[string]string, error) {
			return map[string]string{webhook.NamespaceLabel: "enabled"}, nil
		})
	case serverNoop:
		handler = admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("")
		})
	default:
		return fmt.Errorf("-serve=%q: want %s or %s", kind, serverMeshinit, serverNoop)
	}
	srv := crwebhook.NewServer(crwebhook.Options{
		Host: "127.0.0.1", Port: port, CertDir: certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion = tls.VersionTLS12
			c.NextProtos = []string{"http/1.1"}
		}},
	})
	srv.Register("/"+kind, &admission.Webhook{Handler: handler})
	srv.Register("/cpu", http.HandlerFunc(serveCPU))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return srv.Start(ctx)
}

// serveCPU answers the CPU time (user + system, nanoseconds) this process
// has used, all threads included.
func serveCPU(w http.ResponseWriter, _ *http.Request) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, ru.Utime.Nano()+ru.Stime.Nano())
}

// chartConfig is the webhook configuration the chart installs by default.
func chartConfig() (webhook.Config, error) {
	objs, err := charts.Objects(charts.Options{}, false)
	if err != nil {
		return webhook.Config{}, err
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "meshinit-webhook" {
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cm); err != nil {
				return webhook.Config{}, err
			}
			return webhook.ParseConfig([]byte(cm.Data["config.yaml"]), "meshinit-system")
		}
	}
	return webhook.Config{}, fmt.Errorf("the chart renders no meshinit-webhook ConfigMap")
}
