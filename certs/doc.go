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

// Package certs supplies the serving certificate of meshinit's mutating
// admission webhook, without manual steps, in one of three modes:
//
//   - self-managed (the default, needs nothing installed): a CA and a serving
//     certificate for the webhook Service's DNS names live in two Secrets
//     all replicas share, which the chart creates empty: the CA's (its key
//     and certificates) and the serving one (the certificate, its key and
//     the CA certificates, never the CA key); the replicas may only read
//     and update those two, by name (secret.go; a release's one Secret of
//     before is moved into them). Each replica writes the serving files
//     into its cert dir, puts the CA into the MutatingWebhookConfiguration's
//     caBundle and renews both while serving, a new CA overlapping the old
//     one in the caBundle. The caBundle never loses a CA a replica may still
//     serve: Secrets deleted (the replicas keep serving; helm upgrade
//     re-creates them) or replaced under the replicas leave the CAs already
//     published in the caBundle next to the new one, each replica keeps its
//     certificate until the new CA has propagated, and the old CAs leave
//     afterwards (handover.go);
//   - cert-manager: the chart's Issuer and Certificate (charts/meshinit,
//     templates/certs-*.yaml) have cert-manager issue it and inject the CA;
//     this package only checks at startup that the Certificate is Ready;
//   - files: tls.crt and tls.key are put into the cert dir by someone else.
//
// Start with New and Options; a Provider's Setup runs before the webhook
// server starts, then the Provider runs in the controller-runtime manager on
// every replica. What to issue and when to renew is decided by pure
// functions of the stored certificates and the time (decide.go,
// renewaltime.go, generate.go); secret.go, cabundle.go and certdir.go do the
// reading and writing. NewCA, CA.IssueServing and CA.IssueClient expose the
// same issuing code to tests and tools that need a throwaway CA and
// certificates it signs (the local end-to-end cluster's, for one).
package certs
