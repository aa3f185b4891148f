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

import "context"

// files is ModeFiles: someone else puts tls.crt and tls.key into the cert
// dir and keeps them fresh; the webhook server's certwatcher reloads them.
type files struct{ opts Options }

func (f files) setup(context.Context) error {
	return checkCertDir(f.opts.CertDir, f.opts.Clock.Now())
}

func (f files) run(context.Context) error { return nil }
