#!/usr/bin/env bash
# Builds the MinIO server from the Go module proxy into
# $BIN_DIR/minio/<version>/minio, skipping the build when it is already
# there. The data mover's tests and benchmark run it as a real S3 service on
# 127.0.0.1 (test/harness/s3server), found through the MINIO
# environment variable that the Makefile sets.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"

dir="${BIN_DIR}/minio/${MINIO_VERSION}"

build() {
  if [[ -x "${dir}/minio" ]]; then return; fi
  log "building minio ${MINIO_VERSION} (first run only, a few minutes)"
  local tmp
  tmp="$(scratch_dir echo-minio-build)"
  # go install pkg@version builds outside any module, so nothing leaks into
  # the project's go.mod.
  GOBIN="${tmp}" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go install -trimpath -ldflags "-s -w" "github.com/minio/minio@${MINIO_VERSION}"
  install_into "${tmp}" "${dir}" minio
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build
    echo "MINIO=${dir}/minio"
    ;;
  path) echo "MINIO=${dir}/minio" ;;
  *) echo "usage: $0 [build|path]" >&2; exit 2 ;;
esac
