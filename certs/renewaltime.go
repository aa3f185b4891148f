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
	"crypto/x509"
	"time"
)

// renewalTime is when c is replaced: 2/3 through its lifetime, cert-manager's
// default, leaving a third of it to retry in.
func renewalTime(c *x509.Certificate) time.Time {
	return c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 3)
}

// propagatedTime is when a new CA may start signing the served certificate:
// delay after its NotBefore (its issuance), by when every API server has seen
// the caBundle holding it (provided it was published by then).
func propagatedTime(ca *x509.Certificate, delay time.Duration) time.Time {
	return ca.NotBefore.Add(delay)
}
