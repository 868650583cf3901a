#!/usr/bin/env bash
# Builds the release archive of the kubectl plugin for one OS and
# architecture (GOOS and GOARCH, default this machine's):
# OUT_DIR/kubectl-echo_VERSION_OS_ARCH.tar.gz, holding kubectl-echo,
# kubectl_complete-echo (kubectl's completion of the plugin) and LICENSE at
# its root, as plugins/krew/echo.yaml expects, and prints its SHA-256,
# which the krew manifest of a release carries.
#
# Usage: hack/plugin-archive.sh OUT_DIR VERSION
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:?usage: $0 OUT_DIR VERSION}"
version="${2:?usage: $0 OUT_DIR VERSION}"
os="${GOOS:-$(go env GOOS)}"
arch="${GOARCH:-$(go env GOARCH)}"
stage="$(mktemp -d)"
trap 'rm -rf "${stage}"' EXIT

CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -ldflags "-s -w" -o "${stage}/kubectl-echo" ./cmd/kubectl-echo
cp LICENSE plugins/kubectl_complete-echo "${stage}/"
mkdir -p "${out}"
archive="${out}/kubectl-echo_${version}_${os}_${arch}.tar.gz"
tar -C "${stage}" --owner=0 --group=0 --mtime=@0 -czf "${archive}" kubectl-echo kubectl_complete-echo LICENSE
sha256sum "${archive}"
