# Copyright The meshinit Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# meshinit developer habits. Every target works on a fresh Debian machine as root:
# it installs what it needs (Debian packages, pinned upstream binaries) first.

SHELL := /bin/bash
GO ?= go
# Expensive upstream builds are cached by version outside the repository.
MESHINIT_CACHE ?= /var/cache/meshinit
export MESHINIT_CACHE
# Every Go build here compiles with the flags of the project's release builds
# and of the upstream binaries (static, CGO_ENABLED=0, and -trimpath), the
# tests included, so that the Go build cache holds each package once: the
# images internal/images' tests build reuse what the tests compiled, and
# kube-apiserver, etcd, kubectl and kube-controller-manager share the
# standard library and 290 third-party packages with the tests (of 1,301;
# the rest differ in version or in a dependency's version, e.g. cel-go).
# (docs/development.md has the figures.)
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(shell $(GO) env GOFLAGS)) -trimpath)
# Pinned here and in hack/tools/go.mod (hack/upstream-binaries.sh checks they agree).
KUBERNETES_VERSION := v1.37.2
KUBERNETES_BIN := $(MESHINIT_CACHE)/kubernetes-$(KUBERNETES_VERSION)/bin
# The version matrix: older Kubernetes versions the envtest packages also run
# against, each built from its own module hack/tools/<version>/go.mod
# (hack/tools/add-version.sh writes one): the oldest the chart accepts
# (Chart.yaml kubeVersion), one in between, and the oldest that serves
# MutatingAdmissionPolicy v1 (injector policy). Newest first: the charts
# package crashes v1.32.13's API server, an upstream bug (docs/install.md),
# and make stops at the first stage that fails; so CI leaves the matrix out.
KUBERNETES_MATRIX := v1.36.5 v1.34.4 v1.32.13
# The packages whose tests start an API server: the chart installed and
# uninstalled, the policies' admission cases, the webhook's injection and dry
# runs, the caBundle's policy and the certificates' Secrets.
MATRIX_PACKAGES := ./charts/ ./webhook/ ./certs/
# Left out of the matrix: the webhook replica's load tests, whose subject is
# its own HTTPS server, not the API server.
MATRIX_SKIP := ^TestReplicaUnder

.PHONY: test test-matrix test-e2e test-release test-timings demo demo-down demo-netns deps lint fuzz images plugin release bench-redirect bench-webhook bench-e2e bench-injection bench-policies

# Test tiers (docs/development.md says what each runs, how long it takes and
# how that was measured). Each is a list of stages that hack/stages.sh runs
# in order, printing a line as each starts and ends and a table (stage, time,
# result) at the end; it stops at the first that fails. .ci/run runs all
# three, one after another.
#   make test         every package but the end-to-end ones, against Kubernetes KUBERNETES_VERSION
#   make test-matrix  the API-server packages again, against each older version of KUBERNETES_MATRIX
#   make test-e2e     the end-to-end tests on a real cluster (the local one; CLUSTER=existing: KUBECONFIG's)
STAGES := hack/stages.sh

# Every package but the end-to-end ones (e2e/...), which need a cluster.
# go test starts packages in the order it is given them, two at a time on two cores: the
# longest first (charts, then the next four by their run time), so that none of them starts
# last and runs alone while the other core has nothing left.
LONGEST_FIRST := ./charts/ ./webhook/ ./redirect/ ./kubectlplugin/ ./certs/
UNIT_PACKAGES = $(shell $(GO) list $(LONGEST_FIRST) ./... | grep -v '^github.com/meshinit/meshinit/e2e\(/\|$$\)')

# The upstream binaries make test needs (kube-apiserver, etcd, kubectl and
# kube-controller-manager); make test-e2e adds the rest of the local cluster's.
ENVTEST_STAGE = "upstream binaries: the envtest set $(KUBERNETES_VERSION)::GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh envtest"

# promtool and the Prometheus Operator's CRDs, which charts' tests check the
# chart's monitoring objects with (hack/prometheus/build.sh; built once into
# MESHINIT_CACHE).
PROMETHEUS_STAGE = "Prometheus tools (promtool, Prometheus Operator CRDs)::GO=$(GO) hack/prometheus/build.sh >/dev/null"

# go test runs without its own vet (-vet=off): the go vet stage before it
# runs every analyzer on every package, go test's vet a subset of them again.
TEST_STAGES = \
	"Debian packages (iptables, iproute2, runc)::hack/install-debian-packages.sh" \
	$(ENVTEST_STAGE) \
	$(PROMETHEUS_STAGE) \
	"go vet ./...::$(GO) vet ./..." \
	"go test (all but e2e, Kubernetes $(KUBERNETES_VERSION))::KUBEBUILDER_ASSETS=$(KUBERNETES_BIN) $(GO) test -count=1 -vet=off -timeout 30m -skip '$(RELEASE_TESTS)' $(UNIT_PACKAGES)"

# The tests that need GoReleaser, whose build links every publisher's SDK
# (tens of minutes cold on two cores): make test-release runs them, as the
# release does; make test runs the rest of internal/release (the registry
# round trip) and leaves these out.
RELEASE_TESTS := ^TestPluginRelease$$
RELEASE_STAGES = \
	"GoReleaser::GO=$(GO) hack/goreleaser/build.sh" \
	"go test -run '$(RELEASE_TESTS)' ./internal/release/::$(GO) test -count=1 -vet=off -timeout 30m -run '$(RELEASE_TESTS)' ./internal/release/"

# The matrix's packages are compiled into test binaries once
# (_output/test-matrix) and each binary runs against every version, in its
# package's directory as go test runs it: go test would link each again per
# version (go caches compiled packages, not linked test binaries).
MATRIX_BIN := _output/test-matrix
MATRIX_STAGES = \
	"upstream binaries: kube-apiserver $(KUBERNETES_MATRIX)::set -e; for v in $(KUBERNETES_MATRIX); do GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh envtest \$$v; done" \
	"go test -c $(MATRIX_PACKAGES)::rm -rf $(MATRIX_BIN) && $(GO) test -c -vet=off -o $(MATRIX_BIN)/ $(MATRIX_PACKAGES)" \
	$(foreach v,$(KUBERNETES_MATRIX),"go test $(MATRIX_PACKAGES) (Kubernetes $(v))::KUBEBUILDER_ASSETS=$(MESHINIT_CACHE)/kubernetes-$(v)/bin hack/run-test-binaries.sh $(MATRIX_BIN) -test.count=1 -test.timeout=30m -test.skip='$(MATRIX_SKIP)' -- $(MATRIX_PACKAGES)")

# The cluster the end-to-end tests and make demo run on: local (the local
# single-node cluster, e2e/cluster, brought up as needed) or existing (the one
# KUBECONFIG names; the images go to MESHINIT_E2E_REGISTRY, which it must be
# able to pull from, or through the node's containerd socket
# MESHINIT_E2E_CONTAINERD). Either says what it will create there first.
CLUSTER ?= local
export MESHINIT_CLUSTER := $(CLUSTER)

# The e2e packages (e2e/cluster's own test, e2e's tests of the chart) all use
# the one cluster and each may bring the local one up and take it down, so
# they run one package at a time (-p 1). On an existing cluster only kubectl
# is needed here (the envtest set has it); the tests that need the local
# cluster (and cert-manager) skip.
E2E_LOCAL_STAGES = \
	"Debian packages (containerd, CNI plugins)::hack/install-debian-packages.sh --cluster" \
	"upstream binaries: the cluster's $(KUBERNETES_VERSION)::GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh cluster" \
	"cert-manager::GO=$(GO) hack/cert-manager/build.sh" \
	"Istio's injector (TestIstioComposition)::GO=$(GO) hack/istio-injector/build.sh >/dev/null"
E2E_STAGES = $(if $(filter existing,$(CLUSTER)),$(ENVTEST_STAGE),$(E2E_LOCAL_STAGES)) \
	"go test ./e2e/... (cluster: $(CLUSTER))::KUBEBUILDER_ASSETS=$(KUBERNETES_BIN) $(GO) test -count=1 -vet=off -p 1 -timeout 45m ./e2e/..."

## test: the one command that proves a change (root): installs what it needs (iptables, iproute2, runc; kube-apiserver, etcd, kubectl and kube-controller-manager of KUBERNETES_VERSION, built once into MESHINIT_CACHE), then go vet and every test but the end-to-end ones, against one Kubernetes version; a line per stage and a table at the end. CI (.ci/run) runs it first, then test-e2e.
test:
	@$(STAGES) $(TEST_STAGES)

## test-matrix: the envtest packages (MATRIX_PACKAGES) against each older Kubernetes version of KUBERNETES_MATRIX, one after another; run by hand (not in CI, see .ci/run).
test-matrix:
	@$(STAGES) $(MATRIX_STAGES)

## test-e2e: the end-to-end tests on a real cluster (root): the local single-node cluster (its binaries, containerd, cert-manager built first), or with CLUSTER=existing the one KUBECONFIG names; CI runs it after make test.
test-e2e:
	@$(STAGES) $(E2E_STAGES)

## test-release: the release's own tests that need GoReleaser (RELEASE_TESTS; GoReleaser built once into MESHINIT_CACHE, tens of minutes cold); make release runs GoReleaser itself. Not part of CI's run, for that cold build.
test-release:
	@$(STAGES) $(RELEASE_STAGES)

## test-timings: where make test's time goes, package by package: compile, link and run, wall and CPU time, with the load (hack/test-timings.sh; TIMINGS_RUN=no builds only). The figures in docs/development.md come from it.
test-timings:
	GO=$(GO) hack/test-timings.sh

# The injector make demo installs: webhook (the chart's default) or policy (a MutatingAdmissionPolicy, no webhook).
INJECTOR ?= webhook

## demo: the first thing to run (root): brings up the local cluster, builds and loads the images, installs the chart and shows, step by step, a pod's traffic going through a proxy and the policy refusing a Deployment; the cluster stays up. INJECTOR=policy shows the API server injecting, with no webhook. CLUSTER=existing runs it on the cluster KUBECONFIG names instead, saying first what it will create there.
demo: deps $(if $(filter existing,$(CLUSTER)),tools-envtest,tools-cluster)
	$(if $(filter existing,$(CLUSTER)),,hack/install-debian-packages.sh --cluster)
	MESHINIT_CLUSTER=$(CLUSTER) GO=$(GO) $(GO) run ./e2e/cmd/demo -injector $(INJECTOR)

## demo-down: take down the cluster make demo left up (everything it started, its state, its rules).
demo-down: cluster-down

## demo-netns: the redirector alone, in a pod-like network namespace: no cluster, seconds (root).
demo-netns: deps
	hack/demo-netns.sh

## deps: Debian packages the tests exercise for real (iptables, iproute2, runc).
deps:
	hack/install-debian-packages.sh

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# How long make fuzz runs each fuzz target.
FUZZTIME ?= 3m

## fuzz: every fuzz target in the repository (func Fuzz* in a tracked *_test.go), FUZZTIME (default 3m) each, one after another; an input that fails is written to the package's testdata/fuzz/<target>/ and stops the run: fix what it found and commit the input as a seed case. Not part of make test, which runs the seeds.
fuzz:
	@set -e; git grep -l '^func Fuzz' -- '*_test.go' | while read -r file; do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "== $$target ($$(dirname "$$file"), $(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "./$$(dirname "$$file")"; \
		done; \
	done

.PHONY: tools-envtest tools-cluster tools-matrix tools-cert-manager

## tools-envtest: kube-apiserver, kubectl, etcd for envtest, built once per version into the cache; make test builds them.
tools-envtest:
	GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh envtest

## tools-cluster: the envtest set plus kubelet, kube-controller-manager, kube-scheduler, kube-proxy.
# Cold (empty Go build cache, warm module cache), on a shared 2-core machine: 7.5 min, 14 CPU min at load 3-4.5
# (seven go builds in a row: 8.7 min, 12 CPU min at load 1-5); 10.6 min at load 4-6. Warm: instant.
tools-cluster:
	GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh cluster

## tools-matrix: kube-apiserver of each version of KUBERNETES_MATRIX, built once per version into the cache, beside links to KUBERNETES_VERSION's kubectl and etcd (hack/upstream-binaries.sh says why).
# Cold: 19.3 min for the first two, 13.6 CPU min, at load 6-12 (a make test-matrix beside it); one alone at load 2-3.5
# about 5.5 to 6.5 min. Building kubectl and etcd per version as before added 34 s a version.
tools-matrix:
	@set -e; for v in $(KUBERNETES_MATRIX); do GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh envtest $$v; done

## tools-cert-manager: cert-manager's controller and cainjector (hack/cert-manager, the version go.mod requires) and its chart, for the end-to-end tests.
# Cold: 2.3 min, 3.3 CPU min, at load 4-6; warm: a link of seconds (it always builds).
tools-cert-manager:
	GO=$(GO) hack/cert-manager/build.sh

.PHONY: tools-prometheus
## tools-prometheus: promtool (github.com/prometheus/prometheus, Apache-2.0) and the Prometheus Operator's CRDs (generated from its API module), at the versions hack/prometheus/go.mod pins, built once into MESHINIT_CACHE; make test builds them.
# Cold (empty Go build cache, warm module cache), on 2 cores shared with a make test: 21 min wall, 7.9 CPU min
# at load 11-16 (promtool 20.6 min of it; with Prometheus's service discovery plugins, before remove_all_sd:
# 51 min wall, 19.6 CPU min at load 16-28). Warm: prints two paths.
tools-prometheus:
	GO=$(GO) hack/prometheus/build.sh

.PHONY: tools-goreleaser
## tools-goreleaser: GoReleaser (hack/goreleaser, the version its go.mod pins; MIT) for make release and internal/release's test.
# Cold: 49 min at load ~19 on 2 shared cores (it links every publisher's SDK); warm: prints its path.
tools-goreleaser:
	GO=$(GO) hack/goreleaser/build.sh

.PHONY: tools-istio
# Timed runs of each tool in bench-redirect (the issue asks for at least 20).
BENCH_N ?= 20
# Both tools run under SCHED_FIFO so that other work on a shared machine (builds)
# inflates neither timing; BENCH_RT= runs them at normal priority.
BENCH_RT ?= chrt --fifo 10
# DNS capture in both tools of bench-redirect: off, all or nameservers (see its -dns flag).
BENCH_DNS ?= off

## tools-istio: Istio's pilot-agent at the version pinned in hack/bench/istio/go.mod, built once into the cache.
tools-istio:
	GO=$(GO) hack/bench/istio/build.sh

## bench-redirect: `redirector apply` vs Istio's `pilot-agent istio-iptables`, each in fresh network namespaces, BENCH_N interleaved runs; BENCH_DNS=all (or nameservers) with DNS capture on in both.
# The redirector is built as its image builds it (hack/images): static, stripped.
bench-redirect: deps
	@agent=$$(GO=$(GO) hack/bench/istio/build.sh) && version=$${agent%/pilot-agent} && \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o _output/bench/redirector ./initimage/cmd/redirector && \
	$(GO) build -o _output/bench/bench-redirect ./hack/bench/redirect && \
	$(BENCH_RT) _output/bench/bench-redirect -redirector _output/bench/redirector -pilot-agent "$$agent" \
		-istio-version "$${version##*/istio-}" -n $(BENCH_N) -dns $(BENCH_DNS)

## bench-webhook: meshinit's admission webhook vs a no-op controller-runtime webhook over TLS on loopback: reviews/s, CPU per review (ratio), p50/p99 at 1,000 reviews/s.
# The benchmark runs at a raised CPU share (BENCH_NICE) so that builds on a shared machine disturb it less;
# SCHED_FIFO (BENCH_RT) is not used here: spinning Go runtime threads at one FIFO priority starve each other.
BENCH_NICE ?= nice -n -15
bench-webhook:
	$(GO) build -o _output/bench/bench-webhook ./hack/bench/webhook
	$(BENCH_NICE) _output/bench/bench-webhook

## bench-policies: where the API server's CPU goes when it evaluates meshinit's ValidatingAdmissionPolicies (compiled and evaluated in-process as the API server does) on make bench-injection's pod: each policy against a floor (one literal validation) in the same run, then the CEL cost each of the RedirectPolicy's validations adds on an injected pod. No cluster needed.
bench-policies:
	$(BENCH_NICE) $(GO) test -count=1 -run '^$$' -bench BenchmarkPolicies -benchtime 1x -timeout 40m ./charts/

# Architectures `make images` builds: every image is a linux/amd64+linux/arm64 index.
ARCHS ?= amd64,arm64
# Registry prefix to push every image to as $(PUSH)/<image>:<version>, e.g. PUSH=registry.example.com/meshinit.
PUSH ?=

## images: redirector, webhook, test-app and test-proxy images as reproducible OCI archives in _output/images, without Docker (ctr -n k8s.io images import <file>); PUSH=<registry prefix> also pushes them. VERSION defaults to the chart's appVersion.
images:
	$(GO) run ./hack/images -arch $(ARCHS) $(if $(VERSION),-version $(VERSION)) $(if $(PUSH),-push $(PUSH))

## release: a versioned release (VERSION=x.y.z REGISTRY=host[:port]/path required): images for ARCHS pushed by digest, the chart with those digests pinned pushed to oci://$(REGISTRY)/charts/meshinit, and GoReleaser's kubectl plugin archives (linux/darwin amd64/arm64), checksums, krew manifest and changelog in _output/release (hack/release).
release:
	@test -n "$(VERSION)" -a -n "$(REGISTRY)" || { echo "make release VERSION=x.y.z REGISTRY=host[:port]/path"; exit 2; }
	$(GO) run ./hack/release -version $(VERSION) -registry $(REGISTRY) -arch $(ARCHS)

## plugin: kubectl-meshinit (`kubectl meshinit`: check, pods, audit, explain) for this machine in _output/bin, built as the images' programs are (static, -trimpath, stripped, its version stamped; VERSION defaults to the chart's appVersion); put it on PATH.
plugin:
	$(GO) run ./hack/images -plugin _output/bin/kubectl-meshinit $(if $(VERSION),-version $(VERSION))

.PHONY: generate

## generate: api/'s deepcopy code and the RedirectPolicy CRD (charts/meshinit/crds/), by the controller-gen pinned in hack/controller-gen/go.mod; what is written from redirect's settings table (the chart's inject.redirect schema and defaults helper, docs/configuration.md's settings table); then the references written from the chart (docs/configuration.md's chart values, docs/redirectpolicy-reference.md from the CRD).
# api/v1alpha1's, redirect's and hack/docs's TestGeneratedFilesAreCurrent fail when they are out of date.
# One after another: hack/docs reads the values schema redirect writes.
generate:
	GO=$(GO) hack/controller-gen/generate.sh
	$(GO) test -count=1 -run '^TestGeneratedFilesAreCurrent$$' ./redirect/ -update
	$(GO) test -count=1 -run '^TestGeneratedFilesAreCurrent$$' ./hack/docs/ -update

.PHONY: cluster-up cluster-down

## cluster-up: the local single-node Kubernetes cluster e2e tests use (root): its own address, ports, containerd and state (e2e/cluster); prints its kubeconfig path last.
cluster-up: tools-cluster
	hack/install-debian-packages.sh --cluster
	GO=$(GO) $(GO) run ./e2e/cmd/localcluster up

## cluster-down: stop the local cluster and remove everything it made.
cluster-down:
	$(GO) run ./e2e/cmd/localcluster down

## bench-e2e: pod start-up on the local cluster, MESHINIT_BENCH_PODS (default 60) pods each of: no init container, a no-op init container, the no-op in meshinit's container shape, injected by meshinit, in random order: medians to Ready, the init container's own run (the runtime's creation of it to its last output), each step of the start as the runtime records it, and meshinit's cost over the no-op (split into its container's shape and its work) with 95% intervals.
bench-e2e: deps tools-cluster
	hack/install-debian-packages.sh --cluster
	$(GO) test -count=1 -run '^$$' -bench BenchmarkPodStartup -benchtime 1x -timeout 30m ./e2e/

## bench-injection: what meshinit adds to a pod create in the API server on the local cluster, against the floor (the same cluster with no meshinit admission object bound): server-side dry-run creates at 30/s, phases floor, injected shape (the webhook's injected pod sent with nothing bound: what the bigger pod itself costs), not governed, webhook, policy, and where an injected pod's time goes: each injector with no ValidatingAdmissionPolicy bound, and the least any injector inside the API server and one policy cost (a MutatingAdmissionPolicy of literals and a one-literal ValidatingAdmissionPolicy); MESHINIT_BENCH_CREATES (default 300) each, MESHINIT_BENCH_ROUNDS (default 3) rounds; p50 and p99 over rounds, the kube-apiserver's CPU per create; MESHINIT_BENCH_PROFILE=<dir> writes a CPU profile of the kube-apiserver in the first round of each injected phase.
bench-injection: deps tools-cluster
	hack/install-debian-packages.sh --cluster
	$(GO) test -count=1 -run '^$$' -bench BenchmarkInjection -benchtime 1x -timeout 30m ./e2e/
