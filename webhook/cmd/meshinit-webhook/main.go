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

// Command meshinit-webhook is meshinit's mutating admission webhook server:
// it injects the redirect init container into the pods that opt in.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/meshinit/meshinit/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(webhook.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
