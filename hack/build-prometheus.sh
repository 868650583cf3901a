#!/usr/bin/env bash
# Builds Prometheus and promtool from the Go module proxy into
# $BIN_DIR/prometheus/<version>/, skipping the build when both are already
# there. The alert tests (test/alerts) run promtool on the rules of
# config/prometheus/prometheusrule.yaml, found through the PROMTOOL
# environment variable that the Makefile sets (PROMETHEUS for the server).
#
# PROMETHEUS_VERSION is the Go module version of github.com/prometheus/prometheus:
# v0.316.0 is Prometheus 3.x's v3.16.0 (the module keeps a v0 major version).
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
BIN_DIR="${BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/bin}"

module=github.com/prometheus/prometheus
dir="${BIN_DIR}/prometheus/${PROMETHEUS_VERSION}"

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# bin/ lies inside the project's module: a go.mod of its own keeps it out of
# the project's packages (see hack/build-control-plane.sh).
fence_bin_dir() {
  mkdir -p "${BIN_DIR}"
  [[ -f "${BIN_DIR}/go.mod" ]] || printf 'module echo-operator.local/bin\n' >"${BIN_DIR}/go.mod"
}

# go_install installs both commands into $1; extra environment assignments
# come first, e.g. go_install GOPROXY=... <dir>.
go_install() {
  local gobin="${*: -1}"
  # go install pkg@version builds outside any module, so nothing leaks into
  # the project's go.mod. remove_all_sd leaves out every service discovery
  # but static, file and HTTP ones: nothing here needs the cloud providers',
  # and they are most of the build.
  env "${@:1:$#-1}" GOBIN="${gobin}" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go install -tags remove_all_sd -trimpath -ldflags "-s -w" \
    "${module}/cmd/promtool@${PROMETHEUS_VERSION}" \
    "${module}/cmd/prometheus@${PROMETHEUS_VERSION}"
}

build() {
  if [[ -x "${dir}/prometheus" && -x "${dir}/promtool" ]]; then return; fi
  log "building prometheus and promtool ${PROMETHEUS_VERSION} (first run only, a few minutes)"
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/echo-prometheus-build.XXXXXX")"
  # go install pkg@version also asks the proxy for the module's version list
  # (deprecation notices). A proxy that refuses that query fails the build
  # even when the module is in the module cache: then build from the cache,
  # served as a file proxy.
  if ! go_install "${tmp}"; then
    log "the module proxy failed; building from the module cache instead"
    go_install GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" "${tmp}"
  fi
  mkdir -p "${dir}"
  local bin
  for bin in promtool prometheus; do
    mv "${tmp}/${bin}" "${dir}/${bin}.tmp"
    mv "${dir}/${bin}.tmp" "${dir}/${bin}"
  done
  rm -rf "${tmp}"
}

paths() {
  echo "PROMETHEUS=${dir}/prometheus"
  echo "PROMTOOL=${dir}/promtool"
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build
    paths
    ;;
  path) paths ;;
  *) echo "usage: $0 [build|path]" >&2; exit 2 ;;
esac
