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

// Command redirector programs a pod's iptables so its TCP traffic flows
// through the proxy. It runs as meshinit's init container.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/meshinit/meshinit/initimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(initimage.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
