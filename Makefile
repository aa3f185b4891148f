# meshinit developer habits. Every target works on a fresh Debian machine as root:
# it installs what it needs (Debian packages, pinned upstream binaries) first.

SHELL := /bin/bash
GO ?= go
# Expensive upstream builds are cached by version outside the repository.
MESHINIT_CACHE ?= /var/cache/meshinit
export MESHINIT_CACHE

.PHONY: test unit deps lint images bench-redirect

## test: everything CI runs: host packages, upstream binaries, then all Go tests.
test: deps
	$(GO) vet ./...
	$(GO) test -count=1 ./...

## deps: Debian packages the tests exercise for real (iptables, iproute2).
deps:
	hack/install-debian-packages.sh

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
