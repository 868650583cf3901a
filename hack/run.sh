#!/usr/bin/env bash
# `make run`: runs the operator against the cluster of $KUBECONFIG or, when
# no cluster is reachable, against a local simulated cluster it starts (a
# real kube-apiserver, etcd, controller manager and scheduler, with KWOK
# playing the nodes). It installs the CRDs, starts the operator, applies the
# sample Echo and waits for it to be Ready, then keeps the operator running
# until Ctrl-C.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"
KUBECTL="${KUBECTL:?run through make run}"
work="${root}/bin/run"
mkdir -p "${work}"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "${pid}" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

if [[ -n "${KUBECONFIG:-}" || -f "${HOME}/.kube/config" ]] && "${KUBECTL}" version --request-timeout=5s >/dev/null 2>&1; then
  say "Using the cluster of your kubeconfig ($("${KUBECTL}" config current-context 2>/dev/null || echo "\$KUBECONFIG"))"
else
  say "No reachable cluster configured: starting a local simulated cluster"
  export KUBECONFIG="${work}/kubeconfig"
  rm -f "${KUBECONFIG}"
  go build -o "${work}/simcluster" ./hack/simcluster
  "${work}/simcluster" --kubeconfig "${KUBECONFIG}" --work-dir "${work}/cluster" >"${work}/simcluster.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 120); do
    [[ -s "${KUBECONFIG}" ]] && "${KUBECTL}" get nodes >/dev/null 2>&1 && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "${work}/simcluster.log"; exit 1; }
    sleep 1
  done
  "${KUBECTL}" get nodes
fi

say "Installing the CRDs"
"${KUBECTL}" apply --server-side -k config/crd

say "Starting the operator (logs: ${work}/manager.log)"
# The operator's namespace holds the key it signs its release records with.
"${KUBECTL}" create namespace echo-operator-system --dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null
go build -o "${work}/manager" ./cmd/manager
"${work}/manager" --operator-namespace=echo-operator-system --health-probe-bind-address=0 --metrics-bind-address=0 >"${work}/manager.log" 2>&1 &
pids+=("$!")

say "Applying the sample Echo"
"${KUBECTL}" apply -f config/samples/echo_v1alpha1_echo.yaml
if ! "${KUBECTL}" wait --for=condition=Ready echo/echo-sample --timeout=180s; then
  tail -n 50 "${work}/manager.log"
  exit 1
fi
"${KUBECTL}" get echo -o wide
"${KUBECTL}" get deployments,services,pods -l app.kubernetes.io/instance=echo-sample

say "echo-operator is running. Try: KUBECONFIG=${KUBECONFIG:-~/.kube/config} kubectl get echoes. Ctrl-C stops it."
wait "${pids[-1]}"
