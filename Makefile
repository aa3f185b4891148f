# meshinit developer habits. Every target works on a fresh Debian machine as root:
# it installs what it needs (Debian packages, pinned upstream binaries) first.

SHELL := /bin/bash
GO ?= go
# Expensive upstream builds are cached by version outside the repository.
MESHINIT_CACHE ?= /var/cache/meshinit
export MESHINIT_CACHE
# Pinned here and in hack/tools/go.mod (hack/upstream-binaries.sh checks they agree).
KUBERNETES_VERSION := v1.37.2
KUBERNETES_BIN := $(MESHINIT_CACHE)/kubernetes-$(KUBERNETES_VERSION)/bin
# The version matrix: older Kubernetes versions the envtest packages also run
# against, each built from its own module hack/tools/<version>/go.mod
# (hack/tools/add-version.sh writes one): the oldest the chart accepts
# (Chart.yaml kubeVersion) and one in between.
KUBERNETES_MATRIX := v1.32.13 v1.34.4
# The packages whose tests start an API server: the chart installed and
# uninstalled, the policies' admission cases, the webhook's injection and dry
# runs, the caBundle's policy and the certificates' Secrets.
MATRIX_PACKAGES := ./charts/ ./webhook/ ./certs/
# Left out of the matrix: the webhook replica's load tests, whose subject is
# its own HTTPS server, not the API server.
MATRIX_SKIP := ^TestReplicaUnder

.PHONY: test test-matrix demo demo-down demo-netns deps lint fuzz images plugin bench-redirect bench-webhook bench-e2e bench-injection

## test: everything CI runs: host packages, upstream binaries, then all Go tests, the end-to-end ones on the local cluster last.
# The e2e packages (e2e/cluster's own test, e2e's tests of the chart) all use the one
# local cluster a machine can run and each may bring it up and take it down, so they
# run after the rest, one package at a time (-p 1), not beside each other or the
# envtest packages.
test: deps tools-cluster tools-matrix tools-cert-manager
	hack/install-debian-packages.sh --cluster
	$(GO) vet ./...
	KUBEBUILDER_ASSETS=$(KUBERNETES_BIN) $(GO) test -count=1 $$($(GO) list ./... | grep -v '/e2e\(/\|$$\)')
	$(MAKE) --no-print-directory test-matrix
	$(GO) test -count=1 -p 1 -timeout 45m ./e2e/...

## test-matrix: the envtest packages (MATRIX_PACKAGES) against each older Kubernetes version of KUBERNETES_MATRIX, one after another; make test runs it.
test-matrix: tools-matrix
	@set -e; for v in $(KUBERNETES_MATRIX); do \
		echo "== Kubernetes $$v: $(MATRIX_PACKAGES)"; \
		KUBEBUILDER_ASSETS=$(MESHINIT_CACHE)/kubernetes-$$v/bin $(GO) test -count=1 -skip '$(MATRIX_SKIP)' $(MATRIX_PACKAGES); \
	done

# The injector make demo installs: webhook (the chart's default) or policy (a MutatingAdmissionPolicy, no webhook).
INJECTOR ?= webhook

## demo: the first thing to run (root): brings up the local cluster, builds and loads the images, installs the chart and shows, step by step, a pod's traffic going through a proxy and the policy refusing a Deployment; the cluster stays up. INJECTOR=policy shows the API server injecting, with no webhook.
demo: deps tools-cluster
	hack/install-debian-packages.sh --cluster
	GO=$(GO) $(GO) run ./e2e/cmd/demo -injector $(INJECTOR)

## demo-down: take down the cluster make demo left up (everything it started, its state, its rules).
demo-down: cluster-down

## demo-netns: the redirector alone, in a pod-like network namespace: no cluster, seconds (root).
demo-netns: deps
	hack/demo-netns.sh

## deps: Debian packages the tests exercise for real (iptables, iproute2).
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

## tools-envtest: kube-apiserver, kubectl, etcd for envtest, built once per version into the cache.
# make test asks for tools-cluster, a superset: one go build for all seven binaries
# overlaps their compiling and linking, two builds (three, then four) would not.
tools-envtest:
	GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh envtest

## tools-cluster: the envtest set plus kubelet, kube-controller-manager, kube-scheduler, kube-proxy.
# Cold (empty Go build cache, warm module cache), on a shared 2-core machine: 7.5 min, 14 CPU min at load 3-4.5
# (seven go builds in a row: 8.7 min, 12 CPU min at load 1-5); 10.6 min at load 4-6. Warm: instant.
tools-cluster:
	GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh cluster

## tools-matrix: kube-apiserver of each version of KUBERNETES_MATRIX, built once per version into the cache, beside links to KUBERNETES_VERSION's kubectl and etcd (hack/upstream-binaries.sh says why).
# Cold: 19.3 min for both, 13.6 CPU min, at load 6-12 (a make test-matrix beside it); one alone at load 2-3.5
# about 5.5 min. Building kubectl and etcd per version as before added 34 s a version.
tools-matrix:
	@set -e; for v in $(KUBERNETES_MATRIX); do GO=$(GO) KUBERNETES_VERSION=$(KUBERNETES_VERSION) hack/upstream-binaries.sh envtest $$v; done

## tools-cert-manager: cert-manager's controller and cainjector (hack/cert-manager, the version go.mod requires) and its chart, for the end-to-end tests.
# Cold: 2.3 min, 3.3 CPU min, at load 4-6; warm: a link of seconds (it always builds).
tools-cert-manager:
	GO=$(GO) hack/cert-manager/build.sh

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

# Architectures `make images` builds: every image is a linux/amd64+linux/arm64 index.
ARCHS ?= amd64,arm64
# Registry prefix to push every image to as $(PUSH)/<image>:<version>, e.g. PUSH=registry.example.com/meshinit.
PUSH ?=

## images: redirector, webhook, test-app and test-proxy images as reproducible OCI archives in _output/images, without Docker (ctr -n k8s.io images import <file>); PUSH=<registry prefix> also pushes them. VERSION defaults to the chart's appVersion.
images:
	$(GO) run ./hack/images -arch $(ARCHS) $(if $(VERSION),-version $(VERSION)) $(if $(PUSH),-push $(PUSH))

## plugin: kubectl-meshinit (`kubectl meshinit`: check, pods, audit, explain) for this machine in _output/bin, built as the images' programs are (static, -trimpath, stripped, its version stamped; VERSION defaults to the chart's appVersion); put it on PATH.
plugin:
	$(GO) run ./hack/images -plugin _output/bin/kubectl-meshinit $(if $(VERSION),-version $(VERSION))

.PHONY: generate

## generate: api/'s deepcopy code and the RedirectPolicy CRD (charts/meshinit/crds/), by the controller-gen pinned in hack/controller-gen/go.mod; and what is written from redirect's settings table: the chart's webhook.inject.redirect schema and defaults helper, the README's flag and annotation tables.
# api/v1alpha1's and redirect's TestGeneratedFilesAreCurrent fail when they are out of date.
generate:
	GO=$(GO) hack/controller-gen/generate.sh
	$(GO) test -count=1 -run '^TestGeneratedFilesAreCurrent$$' ./redirect/ -update

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

## bench-injection: what injection adds to a pod create in the API server on the local cluster: server-side dry-run creates at 30/s, in turn into a namespace not opted in, one the webhook injects and one the policy injector (injector: policy) injects; p50 and p99 and their differences; MESHINIT_BENCH_CREATES (default 600) per namespace.
bench-injection: deps tools-cluster
	hack/install-debian-packages.sh --cluster
	$(GO) test -count=1 -run '^$$' -bench BenchmarkInjection -benchtime 1x -timeout 30m ./e2e/
