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
