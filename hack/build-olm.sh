#!/usr/bin/env bash
# Builds Operator Lifecycle Manager's `olm` and `catalog` commands and the
# operator registry's `opm` from the Go module proxy into
# $BIN_DIR/olm/<version>/{olm,catalog} and $BIN_DIR/opm/<version>/opm, with
# a copy of OLM's CRDs in $BIN_DIR/olm/<version>/crds/, skipping what is
# already there. `make catalog` renders the catalog's template with
# `opm alpha render-template` (go run ./hack/catalog); the OLM tests
# (test/olm) render their catalogs with `opm render` and run all three as
# processes against the simulated cluster, found through the OLM,
# OLM_CATALOG, OLM_CRDS and OPM environment variables (`paths` prints them).
set -euo pipefail

OLM_VERSION="${OLM_VERSION:-v0.46.0}"
OPM_VERSION="${OPM_VERSION:-v1.73.0}"
BIN_DIR="${BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/bin}"

olm_dir="${BIN_DIR}/olm/${OLM_VERSION}"
opm_dir="${BIN_DIR}/opm/${OPM_VERSION}"

# Both projects build with cgo (sqlite) and these tags in their releases.
build_tags="json1,containers_image_openpgp"

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# bin/ lies inside the project's module: a go.mod of its own keeps it out of
# the project's packages (see hack/build-control-plane.sh).
fence_bin_dir() {
  mkdir -p "${BIN_DIR}"
  [[ -f "${BIN_DIR}/go.mod" ]] || printf 'module echo-operator.local/bin\n' >"${BIN_DIR}/go.mod"
}

# install_cmds MODULE VERSION DIR LDFLAGS CMD... builds MODULE/cmd/CMD at
# VERSION for each CMD into DIR, linked with LDFLAGS, in which @COMMIT@
# stands for the commit the version was tagged on. The build runs in a
# throwaway module (go install pkg@version would ask the proxy for the
# module's version list, which it refuses for these modules), so nothing
# leaks into the project's go.mod. Each binary is written under a temporary
# name first, so that an interrupted build leaves nothing that looks
# complete.
install_cmds() {
  local module="$1" version="$2" dir="$3" ldflags="$4"
  shift 4
  local missing=0
  for c in "$@"; do [[ -x "${dir}/${c}" ]] || missing=1; done
  if [[ ${missing} == 0 ]]; then return; fi
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/echo-olm-build.XXXXXX")"
  (
    trap 'rm -rf "${tmp}"' EXIT
    cd "${tmp}"
    go mod init echo-operator.local/olm-tools >/dev/null 2>&1
    go mod edit -require "${module}@${version}"
    {
      echo '//go:build tools'
      echo 'package tools'
      echo 'import ('
      for c in "$@"; do echo "  _ \"${module}/cmd/${c}\""; done
      echo ')'
    } >tools.go
    go mod tidy >/dev/null
    local commit
    commit="$(go mod download -json "${module}@${version}" | sed -n 's/.*"Hash": "\(.*\)".*/\1/p')"
    ldflags="${ldflags//@COMMIT@/${commit}}"
    mkdir -p "${dir}"
    for c in "$@"; do
      log "  go build ${c}"
      CGO_ENABLED=1 GOFLAGS=-buildvcs=false go build -trimpath -tags "${build_tags}" \
        -ldflags "-s -w ${ldflags}" -o "${dir}/${c}.tmp" "${module}/cmd/${c}"
      mv "${dir}/${c}.tmp" "${dir}/${c}"
    done
  )
}

build_olm() {
  copy_olm_crds
  if [[ -x "${olm_dir}/olm" && -x "${olm_dir}/catalog" ]]; then return; fi
  log "building OLM ${OLM_VERSION} olm and catalog (first run only, several minutes)"
  local pkg=github.com/operator-framework/operator-lifecycle-manager
  # As OLM's release builds stamp them (`olm --version`, ClusterOperator status).
  install_cmds "${pkg}" "${OLM_VERSION}" "${olm_dir}" \
    "-X ${pkg}/pkg/version.OLMVersion=${OLM_VERSION#v} -X ${pkg}/pkg/version.GitCommit=@COMMIT@" \
    olm catalog
}

# OLM's own CRDs (CatalogSource, Subscription, ...) ship in its module; a
# cluster needs them before olm and catalog start.
copy_olm_crds() {
  if [[ -d "${olm_dir}/crds" ]]; then return; fi
  local src
  src="$(go mod download -json "github.com/operator-framework/operator-lifecycle-manager@${OLM_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  rm -rf "${olm_dir}/crds.tmp" && mkdir -p "${olm_dir}/crds.tmp"
  cp "${src}"/deploy/chart/crds/*.yaml "${olm_dir}/crds.tmp/"
  chmod -R u+w "${olm_dir}/crds.tmp"
  mv "${olm_dir}/crds.tmp" "${olm_dir}/crds"
}

build_opm() {
  if [[ -x "${opm_dir}/opm" ]]; then return; fi
  log "building opm ${OPM_VERSION} (first run only, a few minutes)"
  local pkg=github.com/operator-framework/operator-registry
  # As the registry's release builds stamp them (`opm version`).
  install_cmds "${pkg}" "${OPM_VERSION}" "${opm_dir}" \
    "-X ${pkg}/cmd/opm/version.opmVersion=${OPM_VERSION} -X ${pkg}/cmd/opm/version.gitCommit=@COMMIT@" \
    opm
}

print_paths() {
  cat <<OUT
OLM=${olm_dir}/olm
OLM_CATALOG=${olm_dir}/catalog
OLM_CRDS=${olm_dir}/crds
OPM=${opm_dir}/opm
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build_opm
    build_olm
    print_paths
    ;;
  opm)
    fence_bin_dir
    build_opm
    echo "OPM=${opm_dir}/opm"
    ;;
  paths) print_paths ;;
  *) echo "usage: $0 [build|opm|paths]" >&2; exit 2 ;;
esac
