// Package certs supplies the serving certificate of meshinit's mutating
// admission webhook, without manual steps, in one of three modes:
//
//   - self-managed (the default, needs nothing installed): a CA and a serving
//     certificate for the webhook Service's DNS names live in one Secret all
//     replicas share; each replica writes them into its cert dir, puts the
//     CA into the MutatingWebhookConfiguration's caBundle and renews both
//     while serving, a new CA overlapping the old one in the caBundle. The
//     caBundle never loses a CA a replica may still serve: a Secret deleted
//     or replaced under the replicas leaves the CAs already published in
//     the caBundle next to the new one, each replica keeps its certificate
//     until the new CA has propagated, and the old CAs leave afterwards
//     (handover.go);
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
