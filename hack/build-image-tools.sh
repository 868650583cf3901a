#!/usr/bin/env bash
# Builds the tools that build and serve the project's images without a
# container engine: BuildKit's buildkitd and buildctl, and the registry of
# distribution/distribution. Each lands in $BIN_DIR/<tool>/<version>/ and is
# skipped when already there, so only the first run pays for the build.
# test/harness/imagebuild runs them (see docs/development.md#images).
#
# buildkitd runs build steps with the real node's runc (hack/build-node.sh).
# The images' stand-in base images hold a static busybox, from Debian's
# busybox-static package: installed with apt-get when missing and the
# script runs as root.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

BUILDKIT_VERSION="${BUILDKIT_VERSION:-v0.34.2}"
REGISTRY_VERSION="${REGISTRY_VERSION:-v3.1.2}"

buildkit_dir="${BIN_DIR}/buildkit/${BUILDKIT_VERSION}"
registry_dir="${BIN_DIR}/registry/${REGISTRY_VERSION}"
busybox=/bin/busybox

build_registry() {
  if [[ -x "${registry_dir}/registry" ]]; then return; fi
  log "building registry ${REGISTRY_VERSION} (first run only)"
  local start=${SECONDS} tmp module=github.com/distribution/distribution/v3
  tmp="$(scratch_dir echo-image-tools)"
  # go install pkg@version builds outside any module; distribution's go.mod
  # has no replace or exclude directive, so it may.
  GOBIN="${tmp}" CGO_ENABLED=0 GOFLAGS=-buildvcs=false with_proxy_fallback \
    go install -trimpath -ldflags "-s -w -X ${module}/version.version=${REGISTRY_VERSION}" \
    "${module}/cmd/registry@${REGISTRY_VERSION}"
  install_into "${tmp}" "${registry_dir}" registry
  log "  registry done in $((SECONDS - start))s"
}

# build_buildkit builds buildkitd and buildctl in a scratch module: BuildKit's
# go.mod has exclude directives, which go install pkg@version refuses, so
# the scratch module repeats them and requires BuildKit as a tool. The tags
# and the static, cgo-free build are those of BuildKit's own Dockerfile.
build_buildkit() {
  if [[ -x "${buildkit_dir}/buildkitd" && -x "${buildkit_dir}/buildctl" ]]; then return; fi
  log "building buildkitd and buildctl ${BUILDKIT_VERSION} (first run only, several minutes)"
  local start=${SECONDS} tmp src pkg=github.com/moby/buildkit
  tmp="$(scratch_dir echo-image-tools)"
  src="$(with_proxy_fallback go mod download -json "${pkg}@${BUILDKIT_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [[ -f "${src}" ]] || die "${pkg}@${BUILDKIT_VERSION} did not download"
  mkdir "${tmp}/mod"
  {
    printf 'module echo-operator.local/buildkit-build\n\n'
    sed -n 's/^go \(.*\)$/go \1/p' "${src}"
    echo
    # BuildKit's exclude block(s), verbatim.
    awk '/^exclude \(/{p=1} p{print} p&&/^\)/{p=0; print ""} /^exclude [^(]/{print}' "${src}"
    # And its replace directives, if it has any.
    awk '/^replace \(/{p=1} p{print} p&&/^\)/{p=0; print ""} /^replace [^(]/{print}' "${src}"
  } >"${tmp}/mod/go.mod"
  (
    cd "${tmp}/mod"
    export GOFLAGS=-buildvcs=false
    # go get names every module it adds: shown only when it fails.
    local out
    out="$(with_proxy_fallback go get -tool "${pkg}/cmd/buildkitd@${BUILDKIT_VERSION}" "${pkg}/cmd/buildctl@${BUILDKIT_VERSION}" 2>&1)" ||
      die "go get ${pkg}@${BUILDKIT_VERSION}: ${out}"
    local ldflags="-s -w -X ${pkg}/version.Version=${BUILDKIT_VERSION} -X ${pkg}/version.Revision=${BUILDKIT_VERSION} -X ${pkg}/version.Package=${pkg}"
    CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${tmp}/buildctl" "${pkg}/cmd/buildctl"
    CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags} -extldflags -static" \
      -tags "osusergo netgo static_build seccomp" -o "${tmp}/buildkitd" "${pkg}/cmd/buildkitd"
  )
  rm -rf "${tmp}/mod"
  install_into "${tmp}" "${buildkit_dir}" buildkitd buildctl
  log "  buildkitd and buildctl done in $((SECONDS - start))s"
}

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

# have_static_busybox: busybox-static's busybox, not the dynamically linked
# one of Debian's busybox package.
have_static_busybox() {
  [[ -x "${busybox}" ]] && ! ldd "${busybox}" >/dev/null 2>&1
}

need_busybox() {
  if have_static_busybox; then return; fi
  if [[ $(id -u) != 0 ]]; then
    die "the builder stand-in needs a static busybox: install the Debian package busybox-static or run as root"
  fi
  log "installing busybox-static with apt-get (the builder stand-in's shell)"
  apt_install busybox-static
  have_static_busybox || die "busybox-static is installed but ${busybox} is not a static binary"
}

have_ca_certs() { [[ -s /etc/ssl/certs/ca-certificates.crt ]]; }

need_ca_certs() {
  if have_ca_certs; then return; fi
  [[ $(id -u) == 0 ]] || die "the base stand-ins need /etc/ssl/certs/ca-certificates.crt: install ca-certificates"
  log "installing ca-certificates with apt-get (the base stand-ins' CA bundle)"
  apt_install ca-certificates
  have_ca_certs || die "ca-certificates is installed but /etc/ssl/certs/ca-certificates.crt is missing"
}

print_paths() {
  cat <<OUT
BUILDKITD=${buildkit_dir}/buildkitd
BUILDCTL=${buildkit_dir}/buildctl
REGISTRY=${registry_dir}/registry
BUSYBOX=${busybox}
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    need_busybox
    need_ca_certs
    build_registry
    build_buildkit
    print_paths
    ;;
  paths) print_paths ;;
  *) echo "usage: $0 [build|paths]" >&2; exit 2 ;;
esac
