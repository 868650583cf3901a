#!/usr/bin/env bash
# Builds the stock helm-operator (the root command of helm-operator-plugins)
# from the Go module proxy into $BIN_DIR/helm-operator/<version>/helm-operator,
# skipping the build when it is already there. The scale benchmark
# (test/bench, `make bench-scale`) runs it as the baseline echo-operator is
# compared with, found through the HELM_OPERATOR environment variable that
# the Makefile sets.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

HELM_OPERATOR_VERSION="${HELM_OPERATOR_VERSION:-v0.9.1}"

module=github.com/operator-framework/helm-operator-plugins
dir="${BIN_DIR}/helm-operator/${HELM_OPERATOR_VERSION}"

# go_install installs the module's root package into $1. go install
# pkg@version builds outside any module, so nothing leaks into the
# project's go.mod.
go_install() {
  GOBIN="$1" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go install -trimpath -ldflags "-s -w" "${module}@${HELM_OPERATOR_VERSION}"
}

build() {
  if [[ -x "${dir}/helm-operator" ]]; then return; fi
  log "building helm-operator ${HELM_OPERATOR_VERSION} (first run only, a few minutes)"
  local tmp
  tmp="$(scratch_dir echo-helm-operator-build)"
  with_proxy_fallback go_install "${tmp}"
  # go install names the binary after the module: helm-operator-plugins.
  mv "${tmp}/helm-operator-plugins" "${tmp}/helm-operator"
  install_into "${tmp}" "${dir}" helm-operator
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
