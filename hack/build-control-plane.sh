#!/usr/bin/env bash
# Builds the binaries of a local simulated cluster from the Go module proxy:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl
# (k8s.io/kubernetes), etcd and kwok. Each lands in
# $BIN_DIR/<component>/<version>/ and is skipped when already there, so only
# the first run pays for the build.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

KUBE_VERSION="${KUBE_VERSION:-v1.35.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"

staging_version="v0${KUBE_VERSION#v1}"   # v1.35.4 -> v0.35.4
kube_minor="$(cut -d. -f2 <<<"${KUBE_VERSION}")"

kube_dir="${BIN_DIR}/kubernetes/${KUBE_VERSION}"
etcd_dir="${BIN_DIR}/etcd/${ETCD_VERSION}"
kwok_dir="${BIN_DIR}/kwok/${KWOK_VERSION}"

# Builds inside a throwaway module so that nothing leaks into the project's go.mod.
scratch_module() {
  local dir
  dir="$(scratch_dir echo-cp-build)"
  echo "${dir}"
}

# build_kubernetes builds the named commands of k8s.io/kubernetes (cmd/<name>)
# that are not in $kube_dir yet; those already there are left alone.
build_kubernetes() {
  local cmds=() c
  for c in "$@"; do [[ -x "${kube_dir}/${c}" ]] || cmds+=("${c}"); done
  if [[ ${#cmds[@]} == 0 ]]; then return; fi
  log "building kubernetes ${KUBE_VERSION}: ${cmds[*]} (first run only, ~10 minutes)"
  local dir; dir="$(scratch_module)"
  (
    cd "${dir}"
    go mod init echo-operator.local/kubernetes >/dev/null 2>&1
    go mod edit -require "k8s.io/kubernetes@${KUBE_VERSION}"
    # k8s.io/kubernetes refers to its staging modules as v0.0.0 with local
    # replaces; point each one at its published release instead.
    local gomod
    gomod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
    for m in $(grep -E '=> \./staging/' "${gomod}" | awk '{print $1}'); do
      go mod edit -replace "${m}=${m}@${staging_version}"
    done
    {
      echo '//go:build tools'
      echo 'package tools'
      echo 'import ('
      for c in "${cmds[@]}"; do echo "  _ \"k8s.io/kubernetes/cmd/${c}\""; done
      echo ')'
    } >tools.go
    go mod tidy >/dev/null
    local pkg="k8s.io/component-base/version"
    local ldflags="-s -w -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${kube_minor} -X ${pkg}.gitTreeState=clean"
    # One go build for every command: it compiles their shared packages
    # once and links the binaries concurrently. They land in a directory
    # beside their final place, then move there one by one.
    mkdir -p "${kube_dir}"
    local out pkgs=()
    out="$(mktemp -d "${kube_dir}/.build.XXXXXX")"
    for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${c}"); done
    log "  go build ${cmds[*]}"
    CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${out}/" "${pkgs[@]}"
    for c in "${cmds[@]}"; do mv "${out}/${c}" "${kube_dir}/${c}"; done
    rm -rf "${out}"
  )
  rm -rf "${dir}"
}

build_etcd() {
  if [[ -x "${etcd_dir}/etcd" ]]; then return; fi
  log "building etcd ${ETCD_VERSION}"
  local dir; dir="$(scratch_module)"
  (
    cd "${dir}"
    go mod init echo-operator.local/etcd >/dev/null 2>&1
    printf '//go:build tools\npackage tools\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go
    go mod edit -require "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
    go mod tidy >/dev/null
    mkdir -p "${etcd_dir}"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${etcd_dir}/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "${etcd_dir}/etcd.tmp" "${etcd_dir}/etcd"
  )
  rm -rf "${dir}"
}

build_kwok() {
  if [[ -x "${kwok_dir}/kwok" && -d "${kwok_dir}/stages" ]]; then return; fi
  log "building kwok ${KWOK_VERSION}"
  mkdir -p "${kwok_dir}"
  GOBIN="${kwok_dir}" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
  # kwok refuses to start without stage configs; they ship in its module.
  local src
  src="$(go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  rm -rf "${kwok_dir}/stages.tmp" && mkdir -p "${kwok_dir}/stages.tmp"
  cp -r "${src}/kustomize/stage/." "${kwok_dir}/stages.tmp/"
  find "${kwok_dir}/stages.tmp" -name '*.go' -delete
  chmod -R u+w "${kwok_dir}/stages.tmp"
  mv "${kwok_dir}/stages.tmp" "${kwok_dir}/stages"
}

print_paths() {
  cat <<OUT
KUBE_APISERVER=${kube_dir}/kube-apiserver
KUBE_CONTROLLER_MANAGER=${kube_dir}/kube-controller-manager
KUBE_SCHEDULER=${kube_dir}/kube-scheduler
KUBECTL=${kube_dir}/kubectl
ETCD=${etcd_dir}/etcd
KWOK=${kwok_dir}/kwok
KWOK_STAGES=${kwok_dir}/stages
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build_etcd
    build_kwok
    build_kubernetes kube-apiserver kube-controller-manager kube-scheduler kubectl
    print_paths
    ;;
  paths) print_paths ;;
  # kubernetes CMD...: only the named k8s.io/kubernetes commands, e.g. the
  # node's kubelet and kube-proxy (hack/build-node.sh).
  kubernetes)
    shift
    [[ $# -gt 0 ]] || { echo "usage: $0 kubernetes CMD..." >&2; exit 2; }
    fence_bin_dir
    build_kubernetes "$@"
    ;;
  *) echo "usage: $0 [build|paths|kubernetes CMD...]" >&2; exit 2 ;;
esac
