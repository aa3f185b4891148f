//go:build tools

// Package tools records the upstream command this module builds, so that
// go mod tidy keeps its dependencies.
package tools

import (
	_ "istio.io/istio/pilot/cmd/pilot-agent"
)
