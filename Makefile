# echo-operator

# VERSION is the operator's version: image tags, the bundle's CSV name
# (echo-operator.v$(VERSION)) and olm.skipRange derive from it, and the
# chart's appVersion must equal it (`make bundle` fails otherwise).
VERSION ?= 0.1.0

# The registry (and namespace) of the images, e.g. registry.example.com/echo.
IMAGE_REGISTRY ?= quay.io/echo-operator
# IMAGE_TAG_BASE is the operator's image without its tag, as in the
# operator-sdk scaffold: the bundle and catalog images are named after it.
IMAGE_TAG_BASE ?= $(IMAGE_REGISTRY)/echo-operator
# The operator's image: the manager, and the data mover of backup and restore Jobs.
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
# The echo server's image, which Echoes without spec.image run.
ECHO_IMG ?= $(IMAGE_REGISTRY)/echo-server:v$(VERSION)

## OLM bundle and catalog (make bundle, make catalog; see docs/install.md)
# The package name: the CSV is $(PACKAGE).v$(VERSION).
PACKAGE ?= echo-operator
# The bundle image (bundle-build, bundle-push; the catalog's image of bundle/).
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
# The bundle images the catalog must hold, comma-separated (the scaffold's
# catalog-build input): each must be an olm.bundle entry of
# catalog-template.yaml, which lists every release (`make catalog` checks it).
BUNDLE_IMGS ?= $(BUNDLE_IMG)
# The catalog image (catalog-build, catalog-push).
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# true: the bundle names the operator's and echo server's images by digest
# (operator-sdk generate bundle --use-image-digests, which reads the digests
# from their registry: IMG and ECHO_IMG must be pushed and reachable, e.g.
# in the registry `make docker-buildx IMAGES_FLAGS=-serve` serves).
USE_IMAGE_DIGESTS ?= false
# Channels of the bundle and the channel a Subscription follows by default:
# alpha while the API is v1alpha1 (a stable channel comes with a stable API).
# catalog-template.yaml must agree with them and with REPLACES (`make catalog`
# checks it).
CHANNELS ?= alpha
DEFAULT_CHANNEL ?= alpha
BUNDLE_METADATA_OPTS ?= --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
BUNDLE_GEN_FLAGS ?= -q --overwrite --package $(PACKAGE) --version $(VERSION) $(BUNDLE_METADATA_OPTS)
ifeq ($(USE_IMAGE_DIGESTS), true)
BUNDLE_GEN_FLAGS += --use-image-digests
endif
# The version this bundle replaces in its channels (spec.replaces), e.g.
# 0.1.0; empty for the first release. Whatever it says, the CSV's
# olm.skipRange '<$(VERSION)' lets any older version upgrade straight to this one.
REPLACES ?=
# The CSV's createdAt annotation. operator-sdk would stamp the wall clock,
# making every `make bundle` differ; set it with VERSION at each release.
CREATED_AT ?= 2026-11-21T00:00:00Z

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

LOCALBIN ?= $(shell pwd)/bin
GOBIN_ENV = GOFLAGS=-buildvcs=false

## Tool versions (installed into bin/<tool>/<version>/ on first use)
CONTROLLER_TOOLS_VERSION ?= v0.20.1
KUSTOMIZE_VERSION ?= v5.8.1
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.21.0
# operator-sdk and the scorecard's test binary (see hack/build-operator-sdk.sh)
OPERATOR_SDK_VERSION ?= v1.42.2
# Control plane of the simulated cluster (see hack/build-control-plane.sh)
KUBE_VERSION ?= v1.35.4
ETCD_VERSION ?= v3.6.16
KWOK_VERSION ?= v0.8.0
# The real node's binaries (see hack/build-node.sh); kubelet and kube-proxy
# are KUBE_VERSION's. PAUSE_VERSION is the pause TAG that k8s.io/kubernetes
# ships at KUBE_VERSION (build/pause/Makefile).
CONTAINERD_VERSION ?= v2.4.2
RUNC_VERSION ?= v1.5.2
CNI_PLUGINS_VERSION ?= v1.10.0
PAUSE_VERSION ?= 3.10.1
# The cluster's services on the real node, built from source with it.
COREDNS_VERSION ?= v1.15.0
LOCAL_PATH_PROVISIONER_VERSION ?= v0.0.30
# The image builder and the registry that serves what it builds (see
# hack/build-image-tools.sh and docs/development.md#images)
BUILDKIT_VERSION ?= v0.34.2
REGISTRY_VERSION ?= v3.1.2
# S3 service of the data mover's tests and benchmark (see hack/build-minio.sh)
MINIO_VERSION ?= v0.0.0-20260212201848-7aac2a2c5b7c
# The stock helm-operator the scale benchmark compares with (see hack/build-helm-operator.sh)
HELM_OPERATOR_VERSION ?= v0.9.1
# Prometheus and promtool of the alert tests (see hack/build-prometheus.sh):
# the Go module version of Prometheus 3.x (v0.316.0 is v3.16.0)
PROMETHEUS_VERSION ?= v0.316.0

# openapi-gen of the kube-openapi version go.mod pins (the live API's OpenAPI)
KUBE_OPENAPI_VERSION ?= $(shell go list -m -f '{{.Version}}' k8s.io/kube-openapi)

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen/$(CONTROLLER_TOOLS_VERSION)/controller-gen
OPENAPI_GEN ?= $(LOCALBIN)/openapi-gen/$(KUBE_OPENAPI_VERSION)/openapi-gen
KUSTOMIZE ?= $(LOCALBIN)/kustomize/$(KUSTOMIZE_VERSION)/kustomize
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint/$(GOLANGCI_LINT_VERSION)/golangci-lint
HELM ?= $(LOCALBIN)/helm/$(HELM_VERSION)/helm
# The kubectl the tests and `make run` use, built with the control plane.
CACHED_KUBECTL = $(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kubectl
# The kubectl of install, uninstall, deploy and undeploy: the one on PATH,
# else the cached one (`make kubectl` builds it alone).
ifeq ($(origin KUBECTL),undefined)
KUBECTL := $(or $(shell command -v kubectl 2>/dev/null),$(CACHED_KUBECTL))
endif
MINIO ?= $(LOCALBIN)/minio/$(MINIO_VERSION)/minio
PROMETHEUS ?= $(LOCALBIN)/prometheus/$(PROMETHEUS_VERSION)/prometheus
PROMTOOL ?= $(LOCALBIN)/prometheus/$(PROMETHEUS_VERSION)/promtool
# OLM and the operator registry: the catalog and the OLM tests (see hack/build-olm.sh)
OLM_VERSION ?= v0.46.0
# The version opm's image carries (opm's go.mod requires it).
GRPC_HEALTH_PROBE_VERSION ?= v0.4.53
OPM_VERSION ?= v1.73.0
OPM ?= $(LOCALBIN)/opm/$(OPM_VERSION)/opm
# OLM v1 (operator-controller and catalogd), for the real node's OLM tests
# (see hack/build-olmv1.sh: the newest version buildable from the module proxy).
OLMV1_VERSION ?= v1.2.0
# OLM's binaries and CRDs, as the OLM tests find them.
OLM_ENV = \
	OLM=$(LOCALBIN)/olm/$(OLM_VERSION)/olm \
	OLM_CATALOG=$(LOCALBIN)/olm/$(OLM_VERSION)/catalog \
	OLM_CRDS=$(LOCALBIN)/olm/$(OLM_VERSION)/crds \
	OLM_DIR=$(LOCALBIN)/olm/$(OLM_VERSION) \
	OPM=$(OPM) \
	OPM_IMAGE_DIR=$(LOCALBIN)/opm/$(OPM_VERSION)/image \
	GRPC_HEALTH_PROBE=$(LOCALBIN)/grpc-health-probe/$(GRPC_HEALTH_PROBE_VERSION)/grpc_health_probe \
	OPERATOR_SDK=$(OPERATOR_SDK) \
	OLMV1_DIR=$(LOCALBIN)/olmv1/$(OLMV1_VERSION)
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk/$(OPERATOR_SDK_VERSION)/operator-sdk
SCORECARD_TEST ?= $(LOCALBIN)/operator-sdk/$(OPERATOR_SDK_VERSION)/scorecard-test

# The simulated cluster's binaries, and the MinIO server, Prometheus tools
# and helm CLI the tests run, as the tests and `make run` find them.
CONTROL_PLANE_ENV = \
	KUBE_APISERVER=$(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kube-apiserver \
	KUBE_CONTROLLER_MANAGER=$(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kube-controller-manager \
	KUBE_SCHEDULER=$(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kube-scheduler \
	KUBECTL=$(CACHED_KUBECTL) \
	ETCD=$(LOCALBIN)/etcd/$(ETCD_VERSION)/etcd \
	KWOK=$(LOCALBIN)/kwok/$(KWOK_VERSION)/kwok \
	KWOK_STAGES=$(LOCALBIN)/kwok/$(KWOK_VERSION)/stages \
	TEST_ASSET_KUBE_APISERVER=$(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kube-apiserver \
	TEST_ASSET_ETCD=$(LOCALBIN)/etcd/$(ETCD_VERSION)/etcd \
	TEST_ASSET_KUBECTL=$(CACHED_KUBECTL) \
	MINIO=$(MINIO) \
	PROMETHEUS=$(PROMETHEUS) \
	PROMTOOL=$(PROMTOOL) \
	HELM=$(HELM)

# The real node's binaries, as hack/build-node.sh prints them.
NODE_ENV = \
	KUBELET=$(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kubelet \
	KUBE_PROXY=$(LOCALBIN)/kubernetes/$(KUBE_VERSION)/kube-proxy \
	CONTAINERD=$(LOCALBIN)/containerd/$(CONTAINERD_VERSION)/containerd \
	CONTAINERD_SHIM=$(LOCALBIN)/containerd/$(CONTAINERD_VERSION)/containerd-shim-runc-v2 \
	CTR=$(LOCALBIN)/containerd/$(CONTAINERD_VERSION)/ctr \
	RUNC=$(LOCALBIN)/runc/$(RUNC_VERSION)/runc \
	CNI_BIN_DIR=$(LOCALBIN)/cni-plugins/$(CNI_PLUGINS_VERSION) \
	PAUSE=$(LOCALBIN)/pause/$(PAUSE_VERSION)/pause \
	COREDNS=$(LOCALBIN)/coredns/$(COREDNS_VERSION)/coredns \
	LOCAL_PATH_PROVISIONER=$(LOCALBIN)/local-path-provisioner/$(LOCAL_PATH_PROVISIONER_VERSION)/local-path-provisioner \
	BUSYBOX=/bin/busybox

# The image builder's binaries, as hack/build-image-tools.sh prints them;
# buildkitd runs its steps with the real node's runc (RUNC, in NODE_ENV).
IMAGE_TOOLS_ENV = \
	BUILDKITD=$(LOCALBIN)/buildkit/$(BUILDKIT_VERSION)/buildkitd \
	BUILDCTL=$(LOCALBIN)/buildkit/$(BUILDKIT_VERSION)/buildctl \
	REGISTRY=$(LOCALBIN)/registry/$(REGISTRY_VERSION)/registry \
	BUSYBOX=/bin/busybox

# Go test flags; override e.g. TEST_FLAGS="-run TestEcho -v".
TEST_FLAGS ?=
GO_TEST_TIMEOUT ?= 40m

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

# The RBAC markers of the manager's role (manager-role: what it does in the
# namespaces it serves; the CSV's permissions) and, apart, those of the live
# API's registration (live-api-role: cluster-scoped APIService and the
# authentication ConfigMap of kube-system; the CSV's clusterPermissions).
# A package of internal/ with markers of the manager's role is added here.
MANAGER_RBAC_PATHS = paths="./controllers/..." paths="./internal/helmreconciler/..." paths="./internal/managerpolicy/..."
LIVE_API_RBAC_PATHS = paths="./internal/servingcert/..."

.PHONY: manifests
manifests: controller-gen ## Generate the CRDs and RBAC from the Go types and markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:allowDangerousTypes=false webhook paths="./api/..." $(MANAGER_RBAC_PATHS) output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=live-api-role $(LIVE_API_RBAC_PATHS) output:rbac:artifacts:config=config/rbac/liveapi
	$(call operator-chart-copies,$(OPERATOR_CHART))

# The operator's chart holds copies of config/: its CRDs in crds/ (Helm's
# convention), and in files/ the generated ClusterRoles' rules, the
# ServiceMonitor, PodMonitor and PrometheusRule whose specs it renders and
# the Grafana dashboard. `make manifests` writes them; verify-generated
# fails when they differ.
OPERATOR_CHART = helm-charts/echo-operator
OPERATOR_CHART_FILES = config/rbac/role.yaml:manager-role.yaml config/rbac/liveapi/role.yaml:live-api-role.yaml \
	config/prometheus/monitor.yaml:servicemonitor.yaml config/prometheus/echo_server_podmonitor.yaml:podmonitor.yaml \
	config/prometheus/prometheusrule.yaml:prometheusrule.yaml config/grafana/echo-operator.json:dashboard.json
define operator-chart-copies
	rm -f $(1)/crds/*.yaml && cp config/crd/bases/*.yaml $(1)/crds/ && \
	for f in $(OPERATOR_CHART_FILES); do cp "$${f%%:*}" "$(1)/files/$${f##*:}"; done
endef

.PHONY: generate
generate: controller-gen openapi-gen ## Generate the DeepCopy methods of the API types and the live API's OpenAPI.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	$(call live-openapi,api/live/v1alpha1)

.PHONY: verify-generated
verify-generated: controller-gen openapi-gen ## Fail when generated files are stale against the Go types.
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	cp -r config api $$tmp/; \
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./api/..." $(MANAGER_RBAC_PATHS) output:crd:artifacts:config=$$tmp/config/crd/bases output:rbac:artifacts:config=$$tmp/config/rbac; \
	$(CONTROLLER_GEN) rbac:roleName=live-api-role $(LIVE_API_RBAC_PATHS) output:rbac:artifacts:config=$$tmp/config/rbac/liveapi; \
	for pkg in api/v1alpha1 api/live/v1alpha1; do \
		$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./$$pkg" output:object:artifacts:config=$$tmp/$$pkg; \
	done; \
	$(call live-openapi,$$tmp/api/live/v1alpha1); \
	diff -r config/crd/bases $$tmp/config/crd/bases && diff config/rbac/role.yaml $$tmp/config/rbac/role.yaml && \
	diff config/rbac/liveapi/role.yaml $$tmp/config/rbac/liveapi/role.yaml && \
	diff -r api $$tmp/api || \
	{ echo "Generated files are stale: run 'make manifests generate' and commit the result."; exit 1; }
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; mkdir -p $$tmp/crds $$tmp/files; \
	$(call operator-chart-copies,$$tmp); \
	diff -r $$tmp/crds $(OPERATOR_CHART)/crds && diff -r $$tmp/files $(OPERATOR_CHART)/files || \
	{ echo "$(OPERATOR_CHART)'s copies of config/ are stale: run 'make manifests' and commit the result."; exit 1; }

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

# golangci-lint runs go vet's analyzers (govet), so lint does not run go vet
# again: `make vet` does, alone.
.PHONY: lint
lint: golangci-lint helm ## Run golangci-lint (go vet's analyzers among its linters) and helm lint --strict.
	$(GOLANGCI_LINT) run ./...
	$(HELM) lint --strict helm-charts/echo
	$(HELM) lint --strict helm-charts/echo -f helm-charts/echo/ci/all-enabled-values.yaml
	$(HELM) lint --strict $(OPERATOR_CHART)
	$(HELM) lint --strict $(OPERATOR_CHART) -f $(OPERATOR_CHART)/ci/all-enabled-values.yaml

# The tools of make test. test-tools builds them TOOLS_JOBS at a time: most
# of a fresh machine's first run is spent building them, and a single Go
# build leaves a core idle while it downloads modules, links, or compiles a
# package others wait for.
TEST_TOOLS = control-plane node-if-root operator-sdk opm olm olmv1 image-tools-if-root minio prometheus golangci-lint helm controller-gen openapi-gen kustomize
TOOLS_JOBS ?= 2

.PHONY: test-tools
test-tools: ## Build every tool make test needs, TOOLS_JOBS at a time (first run only).
	@$(MAKE) --no-print-directory -j$(TOOLS_JOBS) $(TEST_TOOLS)

# The manager binary that every test package running it shares
# (ECHO_MANAGER_BINARY, see test/harness/managerbin). It is built with go
# test's settings, so that the packages compiled for it serve the tests too;
# without it, each package builds its own, two at a time.
TEST_MANAGER = $(LOCALBIN)/test/manager
TEST_MANAGER_ENV = ECHO_MANAGER_BINARY=$(TEST_MANAGER)

.PHONY: test-manager
test-manager: ## Build the manager binary the test packages share.
	go build -o $(TEST_MANAGER) ./cmd/manager

# hack/testsummary reads go test -json and prints what go test prints
# without it, then a table of every package: ok, FAIL or skipped, and why
# it or its tests skipped (not root, a tool missing, -short). With -v in
# TEST_FLAGS it passes every line through. pipefail keeps go test's status.
TEST_SUMMARY = $(LOCALBIN)/test/testsummary
TEST_SUMMARY_FLAGS = $(if $(filter -v,$(TEST_FLAGS)),-v)

.PHONY: test-summary
test-summary: ## Build hack/testsummary, the summary at the end of test and test-unit.
	go build -o $(TEST_SUMMARY) ./hack/testsummary

# test-env prints the environment make test gives go test, as export
# lines, so that one package runs alone as it runs in make test:
# eval "$$(make -s test-env)"; go test ./controllers/ -count=1.
.PHONY: test-env
test-env: ## Print the environment make test gives go test, as export lines to eval (see test/README.md).
	@for v in $(TEST_MANAGER_ENV) $(CONTROL_PLANE_ENV) $(OLM_ENV) $(NODE_ENV) $(IMAGE_TOOLS_ENV); do echo "export $$v"; done

.PHONY: test
test: test-tools verify-generated verify-bundle verify-installer verify-catalog scorecard-static docker-lint imagecheck-test lint test-manager test-summary ## Run every test: unit, integration (envtest), end to end and OLM (simulated cluster), the real node's and the images'; end with what ran and what skipped.
	$(TEST_MANAGER_ENV) $(CONTROL_PLANE_ENV) $(OLM_ENV) $(NODE_ENV) $(IMAGE_TOOLS_ENV) go test ./... -json -timeout $(GO_TEST_TIMEOUT) -count=1 $(TEST_FLAGS) | $(TEST_SUMMARY) $(TEST_SUMMARY_FLAGS)

.PHONY: test-unit
test-unit: test-summary ## Run the tests that need no control plane; end with what ran and what skipped.
	go test ./... -json -short -count=1 $(TEST_FLAGS) | $(TEST_SUMMARY) $(TEST_SUMMARY_FLAGS)

.PHONY: test-e2e
test-e2e: control-plane minio helm test-manager ## Run only the end-to-end tests against the simulated cluster.
	$(TEST_MANAGER_ENV) $(CONTROL_PLANE_ENV) go test ./test/e2e/... -timeout $(GO_TEST_TIMEOUT) -count=1 -v $(TEST_FLAGS)

# How many Echoes test-flood's tenant creates at once (make test's run of
# the same test creates 500).
FLOOD_ECHOES ?= 3000

.PHONY: test-flood
test-flood: control-plane minio test-manager ## Flood one namespace with FLOOD_ECHOES Echoes while another namespace's Echo becomes Ready (see docs/architecture.md).
	$(TEST_MANAGER_ENV) $(CONTROL_PLANE_ENV) E2E_FLOOD_ECHOES=$(FLOOD_ECHOES) go test ./test/e2e/... -run '^TestHostileTenantFloodsItsNamespace$$' -timeout 60m -count=1 -v $(TEST_FLAGS)

# The full fault-injection run: every kill point of every operation, 30
# random kills, control-plane restarts during a 300-Echo rollout and leader
# failover. `make test` runs a subset of the kills and the failover. CHAOS_SEED=<n> replays the
# random kills of a logged seed.
.PHONY: test-chaos
test-chaos: control-plane minio test-manager ## Run the full fault-injection suites (test/chaos, test/failover; see docs/reliability.md).
	CHAOS_FULL=1 $(TEST_MANAGER_ENV) $(CONTROL_PLANE_ENV) go test ./test/chaos/... ./test/failover/... -timeout 150m -count=1 -v $(TEST_FLAGS)

.PHONY: bench
bench: bench-datamover bench-failover bench-live bench-largest bench-scale bench-upgrade ## Run the benchmarks: the data mover's, the leader takeover, the live API's listings, the largest Echoes' memory and the scale comparison (not part of make test; see docs/benchmarks.md).

# The data mover's benchmark: 1 GiB through backup and restore, against
# tar | gzip. It needs about 4 GiB of free space in $TMPDIR.
.PHONY: bench-datamover
bench-datamover: minio ## Run the data mover's benchmark (see docs/benchmarks.md).
	$(CONTROL_PLANE_ENV) go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./internal/datamover/... $(TEST_FLAGS)

# The leader takeover benchmark: the leader of two manager replicas is
# SIGKILLed BENCH_FAILOVER_RUNS times on a simulated cluster.
BENCH_FAILOVER_RUNS ?= 5
.PHONY: bench-failover
bench-failover: control-plane ## Measure how long a standby replica takes to lead after the leader's SIGKILL (see docs/benchmarks.md).
	$(CONTROL_PLANE_ENV) go test -run '^$$' -bench LeaderTakeover -benchtime $(BENCH_FAILOVER_RUNS)x -timeout 30m ./test/failover/... $(TEST_FLAGS)

# The live API's benchmark: listings of 1,000 EchoRevisions and 1,000
# StoredBackups through kube-apiserver, served by the manager of the
# end-to-end suite.
.PHONY: bench-live
bench-live: control-plane minio ## Measure listings of 1,000 revisions and 1,000 stored backups through the live API (see docs/benchmarks.md).
	$(CONTROL_PLANE_ENV) go test -tags linux -run '^$$' -bench LiveAPIListings -benchtime 1x -timeout 30m ./test/e2e/... $(TEST_FLAGS)

# How many Echoes of each size bench-largest creates.
BENCH_LARGEST_ECHOES ?= 200

# The largest Echoes' benchmark: the manager's memory per Echo at the
# largest admitted size, beside as many default Echoes.
.PHONY: bench-largest
bench-largest: control-plane ## Measure the manager's memory per Echo at the largest admitted size, beside default Echoes (BENCH_LARGEST_ECHOES of each; see docs/benchmarks.md).
	$(CONTROL_PLANE_ENV) BENCH_LARGEST_ECHOES=$(BENCH_LARGEST_ECHOES) go test -tags linux -run '^$$' -bench LargestEchoes -benchtime 1x -timeout 60m ./test/e2e/... $(TEST_FLAGS)

# Flags of the scale benchmark (go run ./test/bench -h), e.g.
# BENCH_SCALE_FLAGS="-n 100 -operators echo,stock -idle 2m".
BENCH_SCALE_FLAGS ?= -n 300,1000

# The scale benchmark: N Echos brought up, left idle, updated and (for
# echo-operator) restarted on a fresh simulated cluster per run, by
# echo-operator, by the stock helm-operator and by a plain client.
.PHONY: bench-scale
bench-scale: control-plane helm-operator ## Compare echo-operator, the stock helm-operator and a plain client at scale (see docs/benchmarks.md).
	$(CONTROL_PLANE_ENV) HELM_OPERATOR=$(LOCALBIN)/helm-operator/$(HELM_OPERATOR_VERSION)/helm-operator go run ./test/bench $(BENCH_SCALE_FLAGS)

# The operator upgrade benchmark: N Echos rolled out, then echo-operator
# replaced by a new version, with the same chart, then with a changed one.
BENCH_UPGRADE_FLAGS ?= -n 1000 -operators echo -update=false -startup=false -upgrade -baseline 30s -idle 1m -out _output/bench/upgrade.json -markdown _output/bench/upgrade.md
.PHONY: bench-upgrade
bench-upgrade: control-plane ## Measure operator upgrades with 1,000 Echos in place: revisions, rollouts, requests, time (see docs/benchmarks.md).
	$(CONTROL_PLANE_ENV) go run ./test/bench $(BENCH_UPGRADE_FLAGS)

##@ Build

.PHONY: build
build: ## Build the manager, the echo server and the kubectl plugin (kubectl-echo) into bin/.
	go build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(LOCALBIN)/ ./cmd/manager ./cmd/echo-server ./cmd/kubectl-echo

# The kubectl plugin's release archive, as the krew manifest
# (plugins/krew/echo.yaml) expects it: kubectl-echo and LICENSE at its root.
PLUGIN_VERSION ?= v$(VERSION)
.PHONY: plugin-archive
plugin-archive: ## Build the kubectl plugin's release archive for this machine's OS and architecture into bin/.
	hack/plugin-archive.sh $(LOCALBIN) $(PLUGIN_VERSION)

.PHONY: run
run: control-plane node-if-root image-tools-if-root ## Run the operator against $KUBECONFIG, or a local cluster (a real node as root on Linux, KWOK elsewhere) when none is reachable.
	$(CONTROL_PLANE_ENV) $(NODE_ENV) $(IMAGE_TOOLS_ENV) RELATED_IMAGE_ECHO=$(ECHO_IMG) hack/run.sh

# No container engine is needed for anything else: `make images` builds the
# images with BuildKit. These are for release machines that have one.
CONTAINER_TOOL ?= docker

.PHONY: docker-build
docker-build: ## Build the operator and echo server images with $(CONTAINER_TOOL) (`make images` needs none).
	@command -v $(CONTAINER_TOOL) >/dev/null || { echo "$(CONTAINER_TOOL) is not installed: make images builds the images with BuildKit instead."; exit 1; }
	$(CONTAINER_TOOL) build --target operator -t $(IMG) .
	$(CONTAINER_TOOL) build --target echo-server -t $(ECHO_IMG) .

.PHONY: docker-push
docker-push: ## Push the operator and echo server images.
	$(CONTAINER_TOOL) push $(IMG)
	$(CONTAINER_TOOL) push $(ECHO_IMG)

##@ Deployment

# These use $(KUBECTL) and the kubeconfig it finds ($KUBECONFIG, else
# ~/.kube/config), and build only kustomize, and kubectl where none is on PATH.
.PHONY: install
install: kustomize kubectl ## Install the CRDs into the cluster of $KUBECONFIG.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: kustomize kubectl ## Remove the CRDs from the cluster of $KUBECONFIG.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

# config/prometheus (the ServiceMonitor and the PrometheusRule) is applied
# only where the Prometheus Operator's CRDs are installed.
HAS_PROMETHEUS_CRDS = $(KUBECTL) get crd servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com >/dev/null 2>&1

.PHONY: deploy
deploy: kustomize kubectl ## Deploy the operator into the cluster of $KUBECONFIG, with config/prometheus where the Prometheus Operator is.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	sed -i 's|value: .*echo-server:.*|value: $(ECHO_IMG)|; s|value: .*/echo-operator:v.*|value: $(IMG)|' config/manager/manager.yaml
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -
	@if $(HAS_PROMETHEUS_CRDS); then \
		$(KUSTOMIZE) build config/prometheus | $(KUBECTL) apply --server-side -n echo-operator-system -f -; \
	else \
		echo "No Prometheus Operator CRDs in the cluster: config/prometheus (ServiceMonitor, PrometheusRule) not applied."; \
	fi

.PHONY: undeploy
undeploy: kustomize kubectl ## Remove the operator from the cluster of $KUBECONFIG.
	@if $(HAS_PROMETHEUS_CRDS); then \
		$(KUSTOMIZE) build config/prometheus | $(KUBECTL) delete --ignore-not-found -n echo-operator-system -f -; \
	fi
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

##@ Install manifest

# The install manifest: config/default, what `make deploy` applies but
# config/prometheus, in one file for `kubectl apply --server-side -f`
# (docs/install.md#with-the-install-manifest), naming IMG and ECHO_IMG, by
# tag or by digest (IMG=registry.example.com/echo/echo-operator@sha256:...).
# The committed one names the images the committed bundle names.
INSTALLER ?= dist/install.yaml

# The APIs of the install manifest's objects: those every cluster serves.
# Objects of other APIs (the Prometheus Operator's, for one) fail the
# apply where their CRDs are missing; verify-installer refuses them.
INSTALLER_APIS = v1|apps/v1|rbac\.authorization\.k8s\.io/v1|policy/v1|networking\.k8s\.io/v1|apiextensions\.k8s\.io/v1|apiregistration\.k8s\.io/v1

.PHONY: build-installer
build-installer: manifests kustomize ## Write the install manifest $(INSTALLER): the CRDs, RBAC, Deployment, Services and APIService of config/default, with IMG and ECHO_IMG.
	@mkdir -p $(dir $(INSTALLER))
	@$(call generate-installer,$(INSTALLER))
	@echo "Wrote $(INSTALLER) for $(IMG) and $(ECHO_IMG)."

.PHONY: verify-installer
verify-installer: kustomize ## Fail when dist/install.yaml is stale against config/ or holds objects of APIs a plain cluster lacks.
	@foreign=$$(grep -n '^apiVersion:' dist/install.yaml | grep -vE ':apiVersion: ($(INSTALLER_APIS))$$' || true); \
	[[ -z "$$foreign" ]] || { echo "dist/install.yaml holds objects of APIs a plain cluster lacks, which fail its apply there (put them beside config/prometheus, outside config/default):"; echo "$$foreign"; exit 1; }
	@out=$$(mktemp -d); trap 'rm -rf $$out' EXIT; \
	$(call generate-installer,$$out/install.yaml); \
	diff -q dist/install.yaml $$out/install.yaml >/dev/null || \
	{ diff -u dist/install.yaml $$out/install.yaml | head -40 || true; echo "dist/install.yaml is stale: run 'make build-installer' and commit the result."; exit 1; }

# generate-installer writes the install manifest to $(1): config/default
# built from a scratch copy of config/, edited as `make deploy` edits it
# (manager image IMG, RELATED_IMAGE_ECHO and RELATED_IMAGE_OPERATOR), so
# that config/ stays as it is.
define generate-installer
(tree=$$(mktemp -d); trap 'rm -rf $$tree' EXIT; \
cp -r config $$tree/ && \
(cd $$tree/config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)) && \
sed -i 's|value: .*echo-server:.*|value: $(ECHO_IMG)|; s|value: .*/echo-operator:v.*|value: $(IMG)|' $$tree/config/manager/manager.yaml && \
{ printf '# echo-operator %s: the operator as `make deploy` installs it, without config/prometheus.\n# Written by `make build-installer`; install it with `kubectl apply --server-side -f install.yaml`.\n' '$(VERSION)' && \
$(KUSTOMIZE) build $$tree/config/default; } > $$tree/install.yaml && \
mv $$tree/install.yaml $(1))
endef

##@ Images (no container engine needed; see docs/development.md#images)

IMAGECHECK = cd hack/imagecheck && go run .

.PHONY: docker-lint
docker-lint: ## Check Dockerfile and bundle.Dockerfile (BuildKit's checks and the image rules) and hack/images/node.Dockerfile (BuildKit's checks).
	$(IMAGECHECK) lint -root $(CURDIR)

# The images' tag in the local registry: that of IMG and ECHO_IMG.
IMAGES_TAG ?= v$(VERSION)
# Flags of hack/images, e.g. IMAGES_FLAGS=-serve to keep the registry
# serving them.
IMAGES_FLAGS ?=

.PHONY: images
images: image-tools node ## Build the operator and echo server images from the Dockerfile with BuildKit and push them to a registry on 127.0.0.1 (root on Linux).
	$(NODE_ENV) $(IMAGE_TOOLS_ENV) go run ./hack/images -root $(CURDIR) -version $(VERSION) -tag $(IMAGES_TAG) $(IMAGES_FLAGS)

# The platforms of docker-buildx: an OCI index of them per image.
PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: docker-buildx
docker-buildx: image-tools node ## Build the operator and echo server images for $(PLATFORMS) with BuildKit (cross-compiled, no emulation), push each as an OCI index to a registry on 127.0.0.1 and print the indexes' digests.
	$(NODE_ENV) $(IMAGE_TOOLS_ENV) go run ./hack/images -root $(CURDIR) -version $(VERSION) -tag $(IMAGES_TAG) -platforms $(PLATFORMS) $(IMAGES_FLAGS)

.PHONY: imagecheck-test
imagecheck-test: golangci-lint ## Vet, lint and test hack/imagecheck (a Go module of its own).
	cd hack/imagecheck && go vet ./... && $(GOLANGCI_LINT) run ./... && go test ./... -count=1

##@ Bundle

.PHONY: bundle
bundle: verify-replaces manifests kustomize operator-sdk verify-version ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/ and validate it.
	$(call generate-bundle,$(CURDIR))
	$(call validate-bundle,bundle)

.PHONY: bundle-validate
bundle-validate: operator-sdk ## Validate bundle/ with the operatorframework suite; fail on any error or warning.
	$(call validate-bundle,bundle)

# The APIs of the bundle's objects: those every cluster with OLM serves.
# Objects of other APIs (the Prometheus Operator's, for one) fail the
# install where their CRDs are missing; verify-bundle refuses them.
PLAIN_CLUSTER_APIS = v1|apps/v1|rbac\.authorization\.k8s\.io/v1|policy/v1|networking\.k8s\.io/v1|apiextensions\.k8s\.io/v1|operators\.coreos\.com/v1alpha1

.PHONY: verify-bundle
verify-bundle: verify-replaces kustomize operator-sdk verify-version ## Fail when bundle/ is stale against config/, PROJECT and the API types, or does not validate.
	@crds=$$(sed -n 's/^    kind: //p' config/crd/bases/*.yaml | sort); project=$$(sed -n 's/^  kind: //p' PROJECT | sort); \
	[[ "$$crds" == "$$project" ]] || { echo "PROJECT's kinds ($$(echo $$project)) are not those of config/crd/bases ($$(echo $$crds)): add the missing resources to PROJECT."; exit 1; }
	@foreign=$$(grep -H '^apiVersion:' bundle/manifests/*.yaml | grep -vE ':apiVersion: ($(PLAIN_CLUSTER_APIS))$$' || true); \
	[[ -z "$$foreign" ]] || { echo "The bundle holds objects of APIs a plain cluster lacks, which fail OLM's install there:"; echo "$$foreign"; exit 1; }
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	cp -r config PROJECT $$tmp/; \
	out=$$( ( $(call generate-bundle,$$tmp) ) 2>&1 ) || { echo "$$out"; exit 1; }; \
	diff -r config/manifests $$tmp/config/manifests && diff -r bundle $$tmp/bundle && diff bundle.Dockerfile $$tmp/bundle.Dockerfile || \
	{ echo "The bundle is stale: run 'make bundle' and commit the result."; exit 1; }
	$(call validate-bundle,bundle)

# The scorecard's static tests (config/manifests/scorecard). The scorecard
# runs them in pods, where its test binary reads the bundle from /bundle, a
# fixed path. Here that binary runs in a chroot holding only itself and a
# copy of bundle/ at /bundle: entered through an unprivileged user namespace
# (unshare), or directly when make runs as root (e.g. in a container), so no
# cluster is needed.
SCORECARD_TESTS ?= basic-check-spec olm-bundle-validation olm-crds-have-validation olm-crds-have-resources olm-spec-descriptors olm-status-descriptors

.PHONY: scorecard-static
scorecard-static: operator-sdk ## Run the scorecard's static tests (basic and olm suites) on bundle/, without a cluster.
	@root=$$(mktemp -d); trap 'rm -rf $$root' EXIT; \
	cp -r bundle $$root/bundle; cp $(SCORECARD_TEST) $$root/scorecard-test; mkdir $$root/tmp; \
	if [[ $$(id -u) == 0 ]]; then enter=(chroot $$root); else enter=(unshare --user --map-root-user --root=$$root); fi; \
	failed=; \
	for t in $(SCORECARD_TESTS); do \
		out=$$("$${enter[@]}" /scorecard-test $$t 2>&1) || { echo "$$out"; failed="$$failed $$t"; continue; }; \
		state=$$(sed -n 's/^ *"state": "\(.*\)",*$$/\1/p' <<<"$$out"); \
		printf '%-26s %s\n' "$$t" "$$state"; \
		[[ "$$state" == pass ]] || { echo "$$out"; failed="$$failed $$t"; }; \
	done; \
	[[ -z "$$failed" ]] || { echo "Scorecard tests failed:$$failed"; exit 1; }

.PHONY: verify-version
verify-version: ## Fail when the charts' appVersion, or the operator chart's version, is not $(VERSION).
	@v=$$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' helm-charts/echo/Chart.yaml); \
	[[ "$$v" == "$(VERSION)" ]] || { echo "helm-charts/echo/Chart.yaml has appVersion $$v, the Makefile VERSION $(VERSION): make them equal."; exit 1; }
	@for field in appVersion version; do \
		v=$$(sed -n "s/^$$field: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$$/\1/p" $(OPERATOR_CHART)/Chart.yaml); \
		[[ "$$v" == "$(VERSION)" ]] || { echo "$(OPERATOR_CHART)/Chart.yaml has $$field $$v, the Makefile VERSION $(VERSION): make them equal."; exit 1; }; \
	done

# The releases are the CSVs of $(CATALOG_TEMPLATE)'s channel entries, the
# first release the first of them: any later VERSION replaces one of them.
CATALOG_RELEASES = grep -oE 'name: $(PACKAGE)\.v[^ ,}]+' $(CATALOG_TEMPLATE) | sed 's/^name: $(PACKAGE)\.v//'

.PHONY: verify-replaces
verify-replaces: ## Fail when VERSION is not the first release of $(CATALOG_TEMPLATE) and REPLACES is empty, or REPLACES is not a release there.
	@releases=$$($(CATALOG_RELEASES)); first=$$(head -n1 <<<"$$releases"); \
	previous=$$(grep -vxF '$(VERSION)' <<<"$$releases" | tail -n1 || true); \
	if [[ -z "$(REPLACES)" ]]; then \
		[[ -z "$$first" || "$$first" == "$(VERSION)" ]] || { echo "VERSION $(VERSION) is not the first release ($$first in $(CATALOG_TEMPLATE)): set REPLACES to the release it upgrades from, e.g. make bundle VERSION=$(VERSION) REPLACES=$$previous."; exit 1; }; \
	elif [[ "$(REPLACES)" == "$(VERSION)" ]] || ! grep -qxF '$(REPLACES)' <<<"$$releases"; then \
		echo "REPLACES=$(REPLACES) is not an earlier release in $(CATALOG_TEMPLATE) (it lists $$(echo $$releases)): set it to the release VERSION $(VERSION) upgrades from."; exit 1; \
	fi

.PHONY: bundle-build
bundle-build: ## Build the bundle image $(BUNDLE_IMG) with $(CONTAINER_TOOL).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

.PHONY: catalog-build
catalog-build: ## Build the catalog image $(CATALOG_IMG) of catalog/ (catalog.Dockerfile) with $(CONTAINER_TOOL).
	$(CONTAINER_TOOL) build -f catalog.Dockerfile -t $(CATALOG_IMG) .

.PHONY: catalog-push
catalog-push: ## Push the catalog image.
	$(CONTAINER_TOOL) push $(CATALOG_IMG)

# generate-bundle generates the bundle into $(1)/bundle and
# $(1)/bundle.Dockerfile from the config/ tree under $(1), which it edits
# like `make deploy` does (manager image IMG, RELATED_IMAGE_ECHO and
# RELATED_IMAGE_OPERATOR). `operator-sdk generate kustomize manifests`
# refreshes the base CSV's owned CRDs from the API types' markers of the
# resources of PROJECT, which `operator-sdk generate bundle` reads too
# (the bundle's project_layout): both run beside $(1)/PROJECT. The markers
# are read from api/v1alpha1 alone: operator-sdk v1.42.2 stops reading a
# tree at its first package marked +kubebuilder:skip (api/live/v1alpha1,
# served by the operator, not CRDs), and then only warns that it found no
# Go type for each kind, which fails here. operator-sdk stamps
# createdAt with the wall clock and has no option for spec.replaces: both
# are set afterwards, with containerImage and olm.skipRange. With
# USE_IMAGE_DIGESTS=true operator-sdk resolves every image the CSV names
# (the Deployment's, RELATED_IMAGE_*, containerImage, which the base CSV
# takes from IMG) to its digest in its registry, and fails where that is
# unreachable.
define generate-bundle
(cd $(1)/config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)); \
sed -i 's|value: .*echo-server:.*|value: $(ECHO_IMG)|; s|value: .*/echo-operator:v.*|value: $(IMG)|' $(1)/config/manager/manager.yaml; \
sed -i 's|^    containerImage: .*|    containerImage: $(IMG)|' $(1)/config/manifests/bases/$(PACKAGE).clusterserviceversion.yaml; \
out=$$($(OPERATOR_SDK) generate kustomize manifests -q --interactive=false --package $(PACKAGE) --apis-dir api/v1alpha1 \
	--input-dir $(1)/config/manifests --output-dir $(1)/config/manifests 2>&1) || { echo "$$out"; exit 1; }; \
! grep -q 'Skipping definitions parsing' <<<"$$out" || { echo "$$out"; echo "operator-sdk read no markers of a kind of PROJECT."; exit 1; }; \
rm -rf $(1)/bundle; \
$(KUSTOMIZE) build $(1)/config/manifests | (cd $(1) && $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)) || exit 1; \
sed -i -e 's|^    createdAt: .*|    createdAt: "$(CREATED_AT)"|' \
	$(if $(filter true,$(USE_IMAGE_DIGESTS)),,-e 's|^    containerImage: .*|    containerImage: $(IMG)|') \
	-e "s|^    olm.skipRange: .*|    olm.skipRange: '<$(VERSION)'|" \
	$(if $(REPLACES),-e 's|^  version: |  replaces: $(PACKAGE).v$(REPLACES)\n&|') \
	$(1)/bundle/manifests/$(PACKAGE).clusterserviceversion.yaml
endef

# validate-bundle validates the bundle in $(1) with the optional
# operatorframework suite (OperatorHub metadata, good practices, deprecated
# APIs for minKubeVersion) and fails on warnings as well as errors.
define validate-bundle
@out=$$($(OPERATOR_SDK) bundle validate $(1) --select-optional suite=operatorframework 2>&1) || { echo "$$out"; exit 1; }; \
echo "$$out"; \
! grep -qiE 'level=(warn|warning|error)|^(WARN|ERRO)' <<<"$$out" || { echo "bundle validate reported warnings: fix them."; exit 1; }
endef

# The catalog's template: its package, channels and bundle images (see
# docs/install.md#releases-in-the-catalog). hack/catalog renders it with
# `opm alpha render-template`, serving the image $(BUNDLE_IMG) from bundle/.
CATALOG_TEMPLATE ?= catalog-template.yaml
RENDER_CATALOG = go run ./hack/catalog -opm $(OPM) -template $(CATALOG_TEMPLATE) -bundle-dir bundle -bundle-image $(BUNDLE_IMG) -bundle-images $(BUNDLE_IMGS)

# The image catalog.Dockerfile builds the catalog image from: opm's, which
# serves the catalog (opm serve), of the opm that renders it.
OPM_IMAGE ?= quay.io/operator-framework/opm:$(OPM_VERSION)
# catalog-dockerfile writes $(1).Dockerfile for the catalog directory $(1).
define catalog-dockerfile
rm -f $(1).Dockerfile && $(OPM) generate dockerfile $(1) --base-image $(OPM_IMAGE) --builder-image $(OPM_IMAGE)
endef

.PHONY: catalog
catalog: opm ## Render the file-based catalog (catalog/echo-operator/catalog.yaml) from catalog-template.yaml and bundle/, and catalog.Dockerfile.
	$(RENDER_CATALOG) -o catalog/$(PACKAGE)/catalog.yaml
	$(OPM) validate catalog
	$(call catalog-dockerfile,catalog)

.PHONY: verify-catalog
verify-catalog: opm ## Fail when catalog/ or catalog.Dockerfile is stale against catalog-template.yaml and bundle/, or does not validate.
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(RENDER_CATALOG) -o $$tmp/catalog/$(PACKAGE)/catalog.yaml; \
	$(OPM) validate $$tmp/catalog; \
	$(call catalog-dockerfile,$$tmp/catalog); \
	diff -ru catalog $$tmp/catalog && diff catalog.Dockerfile $$tmp/catalog.Dockerfile || \
	{ echo "catalog/ or catalog.Dockerfile is stale: run 'make catalog' and commit the result."; exit 1; }

.PHONY: test-olm
test-olm: control-plane minio olm test-manager ## Install, run and upgrade the operator through OLM on the simulated cluster (part of test).
	$(TEST_MANAGER_ENV) $(CONTROL_PLANE_ENV) $(OLM_ENV) go test ./test/olm/... -timeout $(GO_TEST_TIMEOUT) -count=1 -v $(TEST_FLAGS)

.PHONY: test-olm-node
test-olm-node: control-plane node image-tools olm olmv1 operator-sdk helm controller-gen kustomize ## Install, upgrade and remove the operator through OLM (as pods), every install mode, operator-sdk run bundle, OLM v1's ClusterExtension, and the install manifest, on a real node (root on Linux; part of test).
	$(CONTROL_PLANE_ENV) $(OLM_ENV) $(NODE_ENV) $(IMAGE_TOOLS_ENV) go test ./test/olmnode/... -timeout $(GO_TEST_TIMEOUT) -count=1 -v $(TEST_FLAGS)

##@ Tools

.PHONY: olm
olm: opm ## Build OLM, opm and grpc_health_probe, for the OLM tests and images (first run only).
	OLM_VERSION=$(OLM_VERSION) OPM_VERSION=$(OPM_VERSION) GRPC_HEALTH_PROBE_VERSION=$(GRPC_HEALTH_PROBE_VERSION) BIN_DIR=$(LOCALBIN) hack/build-olm.sh build >/dev/null

.PHONY: olmv1
olmv1: kustomize ## Build OLM v1's operator-controller and catalogd and render its release manifest, for the real node's OLM tests (first run only).
	OLMV1_VERSION=$(OLMV1_VERSION) BIN_DIR=$(LOCALBIN) KUSTOMIZE=$(KUSTOMIZE) hack/build-olmv1.sh build >/dev/null

.PHONY: opm
opm: ## Build opm (first run only).
	OPM_VERSION=$(OPM_VERSION) BIN_DIR=$(LOCALBIN) hack/build-olm.sh opm >/dev/null

.PHONY: minio
minio: ## Build the MinIO server of the data mover's tests (first run only).
	MINIO_VERSION=$(MINIO_VERSION) BIN_DIR=$(LOCALBIN) hack/build-minio.sh build >/dev/null

.PHONY: prometheus
prometheus: ## Build Prometheus and promtool of the alert tests (first run only).
	PROMETHEUS_VERSION=$(PROMETHEUS_VERSION) BIN_DIR=$(LOCALBIN) hack/build-prometheus.sh build >/dev/null

.PHONY: helm-operator
helm-operator: ## Build the stock helm-operator of the scale benchmark (first run only).
	HELM_OPERATOR_VERSION=$(HELM_OPERATOR_VERSION) BIN_DIR=$(LOCALBIN) hack/build-helm-operator.sh build >/dev/null

.PHONY: kubectl
kubectl: ## Build the cached kubectl when KUBECTL is it and it is missing (no kubectl on PATH).
	@if [ "$(KUBECTL)" = "$(CACHED_KUBECTL)" ] && [ ! -x "$(CACHED_KUBECTL)" ]; then \
		KUBE_VERSION=$(KUBE_VERSION) BIN_DIR=$(LOCALBIN) hack/build-control-plane.sh kubernetes kubectl; \
	fi

.PHONY: control-plane
control-plane: ## Build the simulated cluster's binaries (first run only).
	KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) KWOK_VERSION=$(KWOK_VERSION) BIN_DIR=$(LOCALBIN) hack/build-control-plane.sh build >/dev/null

.PHONY: node
node: ## Build the real node's binaries: kubelet, kube-proxy, containerd, runc, CNI plugins, pause, CoreDNS, local-path-provisioner (first run only).
	KUBE_VERSION=$(KUBE_VERSION) CONTAINERD_VERSION=$(CONTAINERD_VERSION) RUNC_VERSION=$(RUNC_VERSION) \
	CNI_PLUGINS_VERSION=$(CNI_PLUGINS_VERSION) PAUSE_VERSION=$(PAUSE_VERSION) COREDNS_VERSION=$(COREDNS_VERSION) \
	LOCAL_PATH_PROVISIONER_VERSION=$(LOCAL_PATH_PROVISIONER_VERSION) BIN_DIR=$(LOCALBIN) hack/build-node.sh build >/dev/null

# After the control plane: kubelet and kube-proxy reuse what its build
# compiled of k8s.io/kubernetes, which a concurrent build would compile again.
.PHONY: node-if-root
node-if-root: control-plane ## `node` where the real node's tests run (root on Linux); elsewhere say why they skip.
	@if [ "$$(uname -s)" = Linux ] && [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory node; \
	else echo "Not building the real node: it needs root on Linux, so its tests skip."; fi

.PHONY: image-tools
image-tools: ## Build buildkitd, buildctl and the registry of `make images` and the image tests (first run only).
	BUILDKIT_VERSION=$(BUILDKIT_VERSION) REGISTRY_VERSION=$(REGISTRY_VERSION) BIN_DIR=$(LOCALBIN) hack/build-image-tools.sh build >/dev/null

.PHONY: image-tools-if-root
image-tools-if-root: ## `image-tools` where the image tests run (root on Linux); elsewhere say why they skip.
	@if [ "$$(uname -s)" = Linux ] && [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory image-tools; \
	else echo "Not building the image tools: buildkitd needs root on Linux, so the image tests skip."; fi

.PHONY: operator-sdk
operator-sdk: ## Build operator-sdk and the scorecard's test binary (first run only).
	OPERATOR_SDK_VERSION=$(OPERATOR_SDK_VERSION) BIN_DIR=$(LOCALBIN) hack/build-operator-sdk.sh build >/dev/null

.PHONY: openapi-gen
openapi-gen: $(OPENAPI_GEN) ## Install openapi-gen.
$(OPENAPI_GEN):
	$(call go-install-tool,$(OPENAPI_GEN),k8s.io/kube-openapi/cmd/openapi-gen@$(KUBE_OPENAPI_VERSION))

# live-openapi writes the OpenAPI definitions of the live API, and of the
# apimachinery types it uses, to $(1)/zz_generated.openapi.go.
define live-openapi
$(OPENAPI_GEN) --go-header-file hack/boilerplate.go.txt --output-dir $(1) \
	--output-pkg github.com/echo-operator/echo-operator/api/live/v1alpha1 --output-file zz_generated.openapi.go \
	--report-filename /dev/null \
	github.com/echo-operator/echo-operator/api/live/v1alpha1 \
	k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version
endef

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen.
$(CONTROLLER_GEN):
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION))

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize.
$(KUSTOMIZE):
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint.
$(GOLANGCI_LINT):
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION))

.PHONY: helm
helm: $(HELM) ## Install the helm CLI.
$(HELM):
	BIN_DIR=$(LOCALBIN) HELM_VERSION=$(HELM_VERSION) hack/install-helm.sh >/dev/null

# go-install-tool installs a Go tool at a pinned version into its own
# versioned folder, so that changing a version installs it again.
define go-install-tool
@[ -f "$(1)" ] || { \
	set -e; \
	echo "Installing $(2)"; \
	mkdir -p "$(dir $(1))"; \
	[ -f "$(LOCALBIN)/go.mod" ] || printf 'module echo-operator.local/bin\n' >"$(LOCALBIN)/go.mod"; \
	GOBIN="$(dir $(1))" $(GOBIN_ENV) go install "$(2)"; \
}
endef
