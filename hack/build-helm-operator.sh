#!/usr/bin/env bash
# Builds the stock helm-operator (the root command of helm-operator-plugins)
# from the Go module proxy into $BIN_DIR/helm-operator/<version>/helm-operator,
# skipping the build when it is already there. The scale benchmark
# (test/bench, `make bench-scale`) runs it as the baseline echo-operator is
# compared with, found through the HELM_OPERATOR environment variable that
# the Makefile sets.
set -euo pipefail

HELM_OPERATOR_VERSION="${HELM_OPERATOR_VERSION:-v0.9.1}"
BIN_DIR="${BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/bin}"

module=github.com/operator-framework/helm-operator-plugins
dir="${BIN_DIR}/helm-operator/${HELM_OPERATOR_VERSION}"

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# bin/ lies inside the project's module: a go.mod of its own keeps it out of
# the project's packages (see hack/build-control-plane.sh).
fence_bin_dir() {
  mkdir -p "${BIN_DIR}"
  [[ -f "${BIN_DIR}/go.mod" ]] || printf 'module echo-operator.local/bin\n' >"${BIN_DIR}/go.mod"
}

# go_install installs the module's root package into $1; extra environment
# assignments come first, e.g. go_install GOPROXY=... <dir>.
go_install() {
  local gobin="${*: -1}"
  # go install pkg@version builds outside any module, so nothing leaks into
  # the project's go.mod.
  env "${@:1:$#-1}" GOBIN="${gobin}" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go install -trimpath -ldflags "-s -w" "${module}@${HELM_OPERATOR_VERSION}"
}

build() {
  if [[ -x "${dir}/helm-operator" ]]; then return; fi
  log "building helm-operator ${HELM_OPERATOR_VERSION} (first run only, a few minutes)"
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/echo-helm-operator-build.XXXXXX")"
  # go install pkg@version also asks the proxy for the module's version list
  # (deprecation notices). A proxy that refuses that query fails the build
  # even when the module is in the module cache: then build from the cache,
  # served as a file proxy.
  if ! go_install "${tmp}"; then
    log "the module proxy failed; building from the module cache instead"
    go_install GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" "${tmp}"
  fi
  mkdir -p "${dir}"
  # go install names the binary after the module: helm-operator-plugins.
  mv "${tmp}/helm-operator-plugins" "${dir}/helm-operator.tmp"
  mv "${dir}/helm-operator.tmp" "${dir}/helm-operator"
  rm -rf "${tmp}"
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build
    echo "HELM_OPERATOR=${dir}/helm-operator"
    ;;
  path) echo "HELM_OPERATOR=${dir}/helm-operator" ;;
  *) echo "usage: $0 [build|path]" >&2; exit 2 ;;
esac
