# hack/lib.sh: what the build scripts of hack/ share. Each sources it
# first thing:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1
#
# It turns on bash's strict mode, sets hack_dir (this directory) and
# BIN_DIR (the Makefile's LOCALBIN: bin/ of the repository unless set),
# under which every tool goes into <tool>/<version>/, and defines the
# helpers below. The Makefile runs each script with the versions and
# BIN_DIR it pins; a script run by hand falls back to the same defaults.

set -euo pipefail

hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN_DIR="${BIN_DIR:-$(dirname "${hack_dir}")/bin}"

# log prints a line with the time to standard error: what a build is doing.
log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# die prints what is wrong, with the script's name, and exits 1.
die() { echo "$0: $*" >&2; exit 1; }

# bin/ lies inside the project's module: a go.mod of its own keeps the Go
# files that ship with some tools (kwok's stage configs) out of the
# project's packages.
fence_bin_dir() {
  mkdir -p "${BIN_DIR}"
  [[ -f "${BIN_DIR}/go.mod" ]] || printf 'module echo-operator.local/bin\n' >"${BIN_DIR}/go.mod"
}

# scratch_dir NAME makes a fresh directory named after NAME under $TMPDIR
# (a throwaway module, a build's output) and prints its path.
scratch_dir() { mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX"; }

# install_into TMP DIR FILE... moves each file from the temporary directory
# TMP into DIR, under a temporary name first so that an interrupted build
# leaves nothing that looks complete, then removes TMP.
install_into() {
  local tmp="$1" dir="$2" f
  shift 2
  mkdir -p "${dir}"
  for f in "$@"; do
    mv "${tmp}/${f}" "${dir}/${f}.tmp"
    mv "${dir}/${f}.tmp" "${dir}/${f}"
  done
  rm -rf "${tmp}"
}

# with_proxy_fallback runs a command that reaches the Go module proxy (go
# install, go mod download, ...); when it fails, it runs it again against
# the module cache served as a file proxy. go install pkg@version also asks
# the proxy for the module's version list (deprecation notices), and a
# proxy that refuses that query fails the build even when the module is in
# the module cache.
with_proxy_fallback() {
  if "$@"; then return; fi
  log "the module proxy failed; building from the module cache instead"
  GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" "$@"
}
