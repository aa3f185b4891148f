//go:build tools

// Package tools records the upstream commands this module builds, so that
// go mod tidy keeps their dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
