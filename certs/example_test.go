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

package certs_test

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/meshinit/meshinit/certs"
)

// The webhook command: certificate flags from certs, Setup before the
// manager (its webhook server reads the cert dir when it starts), then the
// Provider keeps the certificates fresh on every replica.
func Example() {
	var opts certs.Options
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	cfg := ctrl.GetConfigOrDie()
	provider, err := certs.New(cfg, opts)
	if err != nil {
		ctrl.Log.Error(err, "certificate options")
		os.Exit(2)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := provider.Setup(ctx); err != nil {
		ctrl.Log.Error(err, "serving certificate")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer: webhook.NewServer(webhook.Options{CertDir: provider.CertDir()}),
	})
	if err != nil {
		os.Exit(1)
	}
	if err := mgr.Add(provider); err != nil {
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("certificates", provider.ReadyCheck); err != nil {
		os.Exit(1)
	}
	// ... register the webhook handler ...
	if err := mgr.Start(ctx); err != nil {
		os.Exit(1)
	}
}
