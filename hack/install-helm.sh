#!/usr/bin/env bash
# Installs the Helm CLI used to lint the echo chart into
# <repo>/bin/helm/<version>/helm (bin/ is gitignored) and prints its path.
# The build is skipped when the binary is already there. Nothing is added
# to the project's go.mod: `go install pkg@version` builds in module-aware
# mode against Helm's own go.mod.
#
# The link flags mirror Helm's release build: the binary reports its full
# version, and its default Kubernetes version (used by `helm template` and
# by lint's deprecation checks when --kube-version is not given) is the one
# of the client-go Helm is built with (1.35 for Helm 3.21), instead of the
# 1.20 a plain `go install` leaves, which the chart's kubeVersion
# (>=1.27.0-0) would reject.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.21.0}"
REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN_DIR="${BIN_DIR:-${REPO_ROOT}/bin}"
HELM_DIR="${BIN_DIR}/helm/${HELM_VERSION}"
HELM_BIN="${HELM_DIR}/helm"
KUBE_MAJOR="${HELM_KUBE_MAJOR:-1}"
KUBE_MINOR="${HELM_KUBE_MINOR:-35}"

if [[ ! -x "${HELM_BIN}" ]]; then
  printf 'building helm %s into %s (first run only)\n' "${HELM_VERSION}" "${HELM_DIR}" >&2
  mkdir -p "${HELM_DIR}"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X ${pkg}.k8sVersionMajor=${KUBE_MAJOR} -X ${pkg}.k8sVersionMinor=${KUBE_MINOR}"
  done
  # Run from outside the project so its go.mod/go.work play no part.
  (cd "${TMPDIR:-/tmp}" && GOWORK=off GOBIN="${HELM_DIR}" \
    go install -trimpath -ldflags "${ldflags}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}")
fi

echo "${HELM_BIN}"
