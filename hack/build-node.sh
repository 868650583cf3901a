#!/usr/bin/env bash
# Builds the binaries of a real Kubernetes node from source: kubelet and
# kube-proxy (k8s.io/kubernetes, through hack/build-control-plane.sh),
# containerd with its runc shim and ctr, runc, the CNI plugins bridge,
# host-local, loopback and portmap, the pause binary of the sandbox image,
# compiled from the pause.c that k8s.io/kubernetes ships, and the programs
# of the cluster's services that run as pods: CoreDNS, with only the plugins
# a cluster needs, and local-path-provisioner. Each lands in
# $BIN_DIR/<component>/<version>/ and is skipped when already there, so
# only the first run pays for the build.
#
# What comes from Debian's packages rather than source is installed with
# apt-get when missing and the script runs as root:
# libseccomp-dev (and pkg-config), which runc's seccomp support links
# against (only while runc is built), nftables, whose nft binary
# kube-proxy runs in its nftables mode, and busybox-static, the userland of
# local-path-provisioner's helper pods.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

KUBE_VERSION="${KUBE_VERSION:-v1.35.4}"
CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
RUNC_VERSION="${RUNC_VERSION:-v1.5.2}"
CNI_PLUGINS_VERSION="${CNI_PLUGINS_VERSION:-v1.10.0}"
# The TAG of build/pause/Makefile in k8s.io/kubernetes@$KUBE_VERSION: the
# script fails when the two disagree.
PAUSE_VERSION="${PAUSE_VERSION:-3.10.1}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
LOCAL_PATH_PROVISIONER_VERSION="${LOCAL_PATH_PROVISIONER_VERSION:-v0.0.30}"
export KUBE_VERSION BIN_DIR

kube_dir="${BIN_DIR}/kubernetes/${KUBE_VERSION}"
containerd_dir="${BIN_DIR}/containerd/${CONTAINERD_VERSION}"
runc_dir="${BIN_DIR}/runc/${RUNC_VERSION}"
cni_dir="${BIN_DIR}/cni-plugins/${CNI_PLUGINS_VERSION}"
pause_dir="${BIN_DIR}/pause/${PAUSE_VERSION}"
coredns_dir="${BIN_DIR}/coredns/${COREDNS_VERSION}"
lpp_dir="${BIN_DIR}/local-path-provisioner/${LOCAL_PATH_PROVISIONER_VERSION}"
# Debian's busybox-static: one static binary, no libraries to copy into an
# image.
busybox=/bin/busybox

containerd_cmds=(containerd containerd-shim-runc-v2 ctr)
cni_plugins=(main/bridge ipam/host-local main/loopback meta/portmap)
# The CoreDNS plugins a cluster's DNS needs, by their directive names in
# CoreDNS's plugin.cfg (the metrics plugin's directive is prometheus).
coredns_plugins=(reload ready health prometheus errors log loadbalance cache template hosts kubernetes loop forward whoami)

# go_install runs go install with its arguments. go install pkg@version
# builds outside any module, so nothing leaks into the project's go.mod.
go_install() { with_proxy_fallback go install "$@"; }

# apt_install installs Debian packages, refreshing the package lists only
# when the install fails for lack of them. It holds a lock of its own
# meanwhile: make builds the tools concurrently, and apt-get fails rather
# than waits while another apt-get runs.
apt_install() (
  exec 9>"${TMPDIR:-/tmp}/echo-operator-apt.lock"
  flock 9
  local out
  if out="$(DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" 2>&1)"; then
    return
  fi
  if ! grep -qE 'Unable to locate package|has no installation candidate|Failed to fetch' <<<"${out}"; then
    echo "${out}" >&2
    return 1
  fi
  log "  apt-get update (no package lists for $*)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null
)

# need_package makes sure a Debian package is installed when have (a
# command) fails: installs it as root, else fails with what to install.
need_package() {
  local pkg="$1" why="$2"
  shift 2
  if "$@"; then return; fi
  if [[ $(id -u) != 0 ]]; then
    die "${why}: install the Debian package ${pkg} (apt-get install ${pkg}) or run as root"
  fi
  log "installing ${pkg} with apt-get (${why})"
  apt_install "${pkg}"
  "$@" || die "${why}: ${pkg} is installed but still not found"
}

have_pkg_config() { command -v pkg-config >/dev/null; }

have_libseccomp() {
  [[ -f /usr/include/seccomp.h ]] && pkg-config --exists libseccomp 2>/dev/null &&
    [[ "$(gcc -print-file-name=libseccomp.a)" == /* ]]
}

have_nft() { PATH="${PATH}:/usr/sbin:/sbin" command -v nft >/dev/null; }

have_busybox() { [[ -x "${busybox}" ]]; }

# building logs what a build step is about to build, for timed.
built=0
building() { built=1; log "building $*"; }

# timed NAME CMD... runs a build step and logs how long it took when it
# built anything.
timed() {
  local name="$1" start=${SECONDS}
  shift
  built=0
  "$@"
  if [[ ${built} == 1 ]]; then log "  ${name} done in $((SECONDS - start))s"; fi
}

build_kubernetes() {
  if [[ -x "${kube_dir}/kubelet" && -x "${kube_dir}/kube-proxy" ]]; then return; fi
  built=1
  "${hack_dir}/build-control-plane.sh" kubernetes kubelet kube-proxy
}

# go_install_missing DIR WHAT LDFLAGS NAME=PACKAGE... builds with go install,
# without cgo (static binaries), each NAME that DIR does not hold yet.
go_install_missing() {
  local dir="$1" what="$2" ldflags="$3" names=() pkgs=() entry
  shift 3
  for entry in "$@"; do
    [[ -x "${dir}/${entry%%=*}" ]] || { names+=("${entry%%=*}"); pkgs+=("${entry#*=}"); }
  done
  if [[ ${#names[@]} == 0 ]]; then return; fi
  building "${what} (first run only)"
  local tmp; tmp="$(scratch_dir echo-node-build)"
  GOBIN="${tmp}" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go_install -trimpath -ldflags "${ldflags}" "${pkgs[@]}"
  install_into "${tmp}" "${dir}" "${names[@]}"
}

build_containerd() {
  local module=github.com/containerd/containerd/v2 c entries=()
  for c in "${containerd_cmds[@]}"; do entries+=("${c}=${module}/cmd/${c}@${CONTAINERD_VERSION}"); done
  go_install_missing "${containerd_dir}" "containerd ${CONTAINERD_VERSION}" \
    "-s -w -X ${module}/version.Version=${CONTAINERD_VERSION}" "${entries[@]}"
}

build_runc() {
  if [[ -x "${runc_dir}/runc" ]]; then return; fi
  command -v gcc >/dev/null || die "runc needs cgo: install gcc and libc6-dev"
  need_package pkg-config "runc's seccomp support finds libseccomp with pkg-config" have_pkg_config
  need_package libseccomp-dev "runc links libseccomp statically" have_libseccomp
  building "runc ${RUNC_VERSION} (first run only, about a minute)"
  local tmp; tmp="$(scratch_dir echo-node-build)"
  # runc's nsenter is C, so cgo; the seccomp tag links libseccomp.a into a
  # static PIE, as runc's own `make static` does. runc's default tag
  # libpathrs needs a Rust library Debian does not have: without it runc
  # uses its pure Go implementation.
  GOBIN="${tmp}" CGO_ENABLED=1 GOFLAGS=-buildvcs=false \
    go_install -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -X main.gitCommit=${RUNC_VERSION} -linkmode external -extldflags -static-pie" \
    "github.com/opencontainers/runc@${RUNC_VERSION}"
  install_into "${tmp}" "${runc_dir}" runc
}

build_cni_plugins() {
  local module=github.com/containernetworking/plugins p entries=()
  for p in "${cni_plugins[@]}"; do entries+=("${p##*/}=${module}/plugins/${p}@${CNI_PLUGINS_VERSION}"); done
  go_install_missing "${cni_dir}" "CNI plugins ${CNI_PLUGINS_VERSION}" \
    "-s -w -X ${module}/pkg/utils/buildversion.BuildVersion=${CNI_PLUGINS_VERSION}" "${entries[@]}"
}

build_pause() {
  if [[ -x "${pause_dir}/pause" ]]; then return; fi
  command -v gcc >/dev/null || die "pause is C: install gcc and libc6-dev"
  building "pause ${PAUSE_VERSION} from k8s.io/kubernetes@${KUBE_VERSION}"
  local src tag
  src="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [[ -n "${src}" ]] || die "k8s.io/kubernetes@${KUBE_VERSION} did not download"
  tag="$(sed -n 's/^TAG ?= *//p' "${src}/build/pause/Makefile")"
  [[ "${tag}" == "${PAUSE_VERSION}" ]] ||
    die "k8s.io/kubernetes@${KUBE_VERSION} ships pause ${tag}, PAUSE_VERSION is ${PAUSE_VERSION}: make them equal"
  local tmp; tmp="$(scratch_dir echo-node-build)"
  # The CFLAGS of build/pause/Makefile; its VERSION has a git revision
  # where this one says where it was built.
  gcc -Os -Wall -Werror -static -DVERSION="v${PAUSE_VERSION}-k8s.io-kubernetes-${KUBE_VERSION}" \
    -o "${tmp}/pause" "${src}/build/pause/linux/pause.c"
  strip "${tmp}/pause"
  install_into "${tmp}" "${pause_dir}" pause
}

# module_dir MODULE@VERSION prints where the module lies in the module
# cache, downloading it first.
module_dir() {
  go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'
}

# build_coredns builds CoreDNS as its documentation's "CoreDNS as a
# library" does: a main package in a scratch module that imports the chosen
# plugins and sets the server's directives, in the order of the plugin.cfg
# that ships in the module (the order in which a query passes the plugins),
# and runs coremain. Only plugins a cluster's DNS uses are compiled in.
build_coredns() {
  if [[ -x "${coredns_dir}/coredns" ]]; then return; fi
  building "CoreDNS ${COREDNS_VERSION} (first run only)"
  local module=github.com/coredns/coredns src tmp line name pkg imports="" directives=""
  src="$(module_dir "${module}@${COREDNS_VERSION}")"
  [[ -n "${src}" ]] || die "${module}@${COREDNS_VERSION} did not download"
  while IFS= read -r line; do
    [[ "${line}" == \#* || "${line}" != *:* ]] && continue
    name="${line%%:*}" pkg="${line#*:}"
    [[ " ${coredns_plugins[*]} " == *" ${name} "* ]] || continue
    [[ "${pkg}" == */* ]] || pkg="${module}/plugin/${pkg}"
    imports+=$'\t_ "'"${pkg}"$'"\n'
    directives+=$'\t"'"${name}"$'",\n'
  done <"${src}/plugin.cfg"
  [[ $(grep -c . <<<"${directives}") == "${#coredns_plugins[@]}" ]] ||
    die "plugin.cfg of ${module}@${COREDNS_VERSION} lacks some of: ${coredns_plugins[*]}"
  tmp="$(scratch_dir echo-node-build)"
  mkdir "${tmp}/src"
  (
    cd "${tmp}/src"
    go mod init echo-operator.local/coredns >/dev/null 2>&1
    go mod edit -require "${module}@${COREDNS_VERSION}"
    cat >main.go <<GO
// Command coredns is CoreDNS ${COREDNS_VERSION} with the plugins of a cluster's DNS.
package main

import (
	"${module}/core/dnsserver"
	"${module}/coremain"

${imports})

func init() {
	dnsserver.Directives = []string{
${directives}	}
}

func main() { coremain.Run() }
GO
    gofmt -w main.go
    go mod tidy >/dev/null 2>&1 || GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" go mod tidy >/dev/null
    CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -tags grpcnotrace \
      -ldflags "-s -w -X ${module}/coremain.GitCommit=${COREDNS_VERSION}" -o "${tmp}/coredns" .
  )
  rm -rf "${tmp}/src"
  install_into "${tmp}" "${coredns_dir}" coredns
}

build_local_path_provisioner() {
  local module=github.com/rancher/local-path-provisioner
  go_install_missing "${lpp_dir}" "local-path-provisioner ${LOCAL_PATH_PROVISIONER_VERSION}" \
    "-s -w -X main.VERSION=${LOCAL_PATH_PROVISIONER_VERSION}" \
    "local-path-provisioner=${module}@${LOCAL_PATH_PROVISIONER_VERSION}"
}

print_paths() {
  cat <<OUT
KUBELET=${kube_dir}/kubelet
KUBE_PROXY=${kube_dir}/kube-proxy
CONTAINERD=${containerd_dir}/containerd
CONTAINERD_SHIM=${containerd_dir}/containerd-shim-runc-v2
CTR=${containerd_dir}/ctr
RUNC=${runc_dir}/runc
CNI_BIN_DIR=${cni_dir}
PAUSE=${pause_dir}/pause
COREDNS=${coredns_dir}/coredns
LOCAL_PATH_PROVISIONER=${lpp_dir}/local-path-provisioner
BUSYBOX=${busybox}
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    need_package nftables "kube-proxy's nftables mode runs nft" have_nft
    timed pause build_pause
    timed "CNI plugins" build_cni_plugins
    timed runc build_runc
    timed containerd build_containerd
    timed "kubelet and kube-proxy" build_kubernetes
    need_package busybox-static "local-path-provisioner's helper pods run busybox" have_busybox
    timed CoreDNS build_coredns
    timed local-path-provisioner build_local_path_provisioner
    print_paths
    ;;
  paths) print_paths ;;
  *) echo "usage: $0 [build|paths]" >&2; exit 2 ;;
esac
