#!/usr/bin/env bash
# Builds the operator-sdk CLI and the scorecard's test binary
# (images/scorecard-test, what the scorecard's test pods run) from the Go
# module proxy into $BIN_DIR/operator-sdk/<version>/, skipping the build
# when both are already there. `make bundle` generates and validates the OLM
# bundle with the CLI; `make scorecard-static` runs the scorecard's static
# tests with the test binary, without a cluster.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

OPERATOR_SDK_VERSION="${OPERATOR_SDK_VERSION:-v1.42.2}"
# The Kubernetes version the release was built against (its Makefile's
# K8S_VERSION); `operator-sdk version` reports it.
OPERATOR_SDK_K8S_VERSION="${OPERATOR_SDK_K8S_VERSION:-v1.33.1}"

module="github.com/operator-framework/operator-sdk"
dir="${BIN_DIR}/operator-sdk/${OPERATOR_SDK_VERSION}"

# Builds inside a throwaway module, as hack/build-control-plane.sh does for
# k8s.io/kubernetes, so that nothing leaks into the project's go.mod and the
# replace directives of the operator-sdk module (if a release has any) apply.
build() {
  if [[ -x "${dir}/operator-sdk" && -x "${dir}/scorecard-test" ]]; then return; fi
  log "building operator-sdk ${OPERATOR_SDK_VERSION} (first run only, several minutes)"
  local tmp
  tmp="$(scratch_dir echo-operator-sdk-build)"
  (
    cd "${tmp}"
    go mod init echo-operator.local/operator-sdk >/dev/null 2>&1
    go mod edit -require "${module}@${OPERATOR_SDK_VERSION}"
    local gomod
    gomod="$(go mod download -json "${module}@${OPERATOR_SDK_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
    # Copy the module's replace directives (one-line and block forms):
    # "old [version] => new [version]" becomes old[@version]=new[@version].
    awk '/^replace \($/ {b=1; next} b && /^\)$/ {b=0; next} b {print} /^replace [^(]/ {sub(/^replace /, ""); print}' "${gomod}" |
      sed -E 's/[[:space:]]*\/\/.*$//; s/^[[:space:]]+//; s/[[:space:]]+=>[[:space:]]+/=/; s/[[:space:]]+/@/g' |
      while read -r r; do
        if [[ -n "${r}" ]]; then go mod edit -replace "${r}"; fi
      done
    printf '//go:build tools\npackage tools\nimport (\n  _ "%s/cmd/operator-sdk"\n  _ "%s/images/scorecard-test"\n)\n' \
      "${module}" "${module}" >tools.go
    go mod tidy >/dev/null
    local pkg="${module}/internal/version"
    local ldflags="-s -w -X ${pkg}.Version=${OPERATOR_SDK_VERSION} -X ${pkg}.GitVersion=${OPERATOR_SDK_VERSION} -X ${pkg}.KubernetesVersion=${OPERATOR_SDK_K8S_VERSION} -X ${pkg}.ImageVersion=${OPERATOR_SDK_VERSION}"
    mkdir -p "${dir}"
    # The CLI links SQLite (operator-registry) and needs cgo; the tags are
    # those of the upstream release build.
    log "  go build operator-sdk"
    CGO_ENABLED=1 GOFLAGS=-buildvcs=false go build -trimpath -tags json1,containers_image_openpgp \
      -ldflags "${ldflags}" -o "${dir}/operator-sdk.tmp" "${module}/cmd/operator-sdk"
    # The test binary runs in a chroot holding nothing else (see the
    # Makefile's scorecard-static), so it is built static.
    log "  go build scorecard-test"
    CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -tags containers_image_openpgp \
      -ldflags "${ldflags}" -o "${dir}/scorecard-test.tmp" "${module}/images/scorecard-test"
    mv "${dir}/operator-sdk.tmp" "${dir}/operator-sdk"
    mv "${dir}/scorecard-test.tmp" "${dir}/scorecard-test"
  )
  rm -rf "${tmp}"
}

print_paths() {
  cat <<OUT
OPERATOR_SDK=${dir}/operator-sdk
SCORECARD_TEST=${dir}/scorecard-test
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build
    print_paths
    ;;
  paths) print_paths ;;
  *) echo "usage: $0 [build|paths]" >&2; exit 2 ;;
esac
