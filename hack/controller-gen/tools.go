//go:build tools

// Package tools records the command this module runs, so that its
// dependencies stay in go.mod.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
