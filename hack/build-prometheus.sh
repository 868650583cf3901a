#!/usr/bin/env bash
# Builds Prometheus and promtool from the Go module proxy into
# $BIN_DIR/prometheus/<version>/, skipping the build when both are already
# there. The alert tests (test/alerts) run promtool on the rules of
# config/prometheus/prometheusrule.yaml, found through the PROMTOOL
# environment variable that the Makefile sets (PROMETHEUS for the server).
#
# PROMETHEUS_VERSION is the Go module version of github.com/prometheus/prometheus:
# v0.316.0 is Prometheus 3.x's v3.16.0 (the module keeps a v0 major version).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"

module=github.com/prometheus/prometheus
dir="${BIN_DIR}/prometheus/${PROMETHEUS_VERSION}"

# go_install installs both commands into $1.
go_install() {
  # go install pkg@version builds outside any module, so nothing leaks into
  # the project's go.mod. remove_all_sd leaves out every service discovery
  # but static, file and HTTP ones: nothing here needs the cloud providers',
  # and they are most of the build.
  GOBIN="$1" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go install -tags remove_all_sd -trimpath -ldflags "-s -w" \
    "${module}/cmd/promtool@${PROMETHEUS_VERSION}" \
    "${module}/cmd/prometheus@${PROMETHEUS_VERSION}"
}

build() {
  if [[ -x "${dir}/prometheus" && -x "${dir}/promtool" ]]; then return; fi
  log "building prometheus and promtool ${PROMETHEUS_VERSION} (first run only, a few minutes)"
  local tmp
  tmp="$(scratch_dir echo-prometheus-build)"
  with_proxy_fallback go_install "${tmp}"
  install_into "${tmp}" "${dir}" promtool prometheus
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
