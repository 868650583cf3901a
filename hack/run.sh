#!/usr/bin/env bash
# `make run`: runs the operator against the cluster of $KUBECONFIG or, when
# no cluster is reachable, against a local cluster it starts: a real
# kube-apiserver, etcd, controller manager and scheduler with a real node
# (kubelet, containerd, runc) where it can (root on Linux), or with KWOK
# playing the nodes elsewhere. It installs the CRDs, starts the operator,
# applies the sample Echo and waits for it to be Ready; on a real node it
# forwards a local port to the Echo's Service and shows the curl command
# that reaches it. It keeps the operator running until Ctrl-C.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "${root}"
KUBECTL="${KUBECTL:?run through make run}"
# Where the run keeps its kubeconfig, logs and cluster state.
work="${RUN_DIR:-${root}/bin/run}"
mkdir -p "${work}"
work="$(cd "${work}" && pwd)"
# The local port `make run` forwards to the sample Echo on a real node.
ECHO_PORT="${ECHO_PORT:-8080}"

# Stopping. A terminal's Ctrl-C reaches every process of its group at
# once: this script, the cluster (hack/simcluster), the operator and the
# forward. The script then signals each of its processes, which is no harm
# to one that got the signal already (simcluster ignores signals during its
# teardown), and waits for all of them: for the cluster, until its node's
# containers, mounts, bridge and routes are gone. Signals during that wait
# are ignored: a second Ctrl-C does not cut it short.
pids=()
stopping=false
cleanup() {
  [[ "${stopping}" == false ]] || return 0
  stopping=true
  trap '' INT TERM HUP
  if ((${#pids[@]})); then
    printf '\nStopping what make run started (the cluster takes a few seconds)...\n'
    kill "${pids[@]}" 2>/dev/null || true
    wait || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

# Why no real node can run here, or nothing.
no_real_node() {
  if [[ "$(uname -s)" != Linux ]]; then echo "a real node needs Linux"
  elif [[ "$(id -u)" != 0 ]]; then echo "a real node needs root (its network, mounts and cgroups)"
  elif [[ -z "${KUBELET:-}" || ! -x "${KUBELET}" || -z "${BUILDKITD:-}" || ! -x "${BUILDKITD}" ]]; then
    echo "the real node's binaries are not built (make node image-tools)"
  fi
}

# start_local_cluster starts hack/simcluster with the given flags and waits
# for its kubeconfig and nodes.
start_local_cluster() {
  export KUBECONFIG="${work}/kubeconfig"
  rm -f "${KUBECONFIG}"
  go build -o "${work}/simcluster" ./hack/simcluster
  "${work}/simcluster" --kubeconfig "${KUBECONFIG}" --work-dir "${work}/cluster" "$@" >"${work}/simcluster.log" 2>&1 &
  pids+=("$!")
  # A first real-node run builds the images: allow for it.
  for _ in $(seq 1 1800); do
    [[ -s "${KUBECONFIG}" ]] && "${KUBECTL}" get nodes >/dev/null 2>&1 && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "${work}/simcluster.log"; exit 1; }
    sleep 1
  done
  "${KUBECTL}" get nodes
}

# The live API (docs/live-api.md): the operator serves it here and keeps
# the caBundle of its APIService, which this script registers with a
# Service that leads kube-apiserver to this process: at the real node's
# address (kube-apiserver dials a Service's endpoints there), or at
# 127.0.0.1 through an ExternalName Service. The operator keeps the
# APIService owned by the viewer ClusterRole, as `make deploy` names it
# (config/base's namePrefix): the script creates that role first.
LIVE_API_PORT="${LIVE_API_PORT:-9443}"
register_live_api() {
  local service
  sed 's/^  name: echo-viewer-role$/  name: echo-operator-echo-viewer-role/' config/rbac/echo_viewer_role.yaml |
    "${KUBECTL}" apply -f - >/dev/null
  if [[ "${real_node}" == true ]]; then
    LIVE_API_ADDRESS=10.255.0.1
    service="apiVersion: v1
kind: Service
metadata: {name: echo-operator-live-api, namespace: echo-operator-system}
spec:
  ports: [{name: https, port: ${LIVE_API_PORT}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-operator-live-api-run
  namespace: echo-operator-system
  labels: {kubernetes.io/service-name: echo-operator-live-api}
addressType: IPv4
ports: [{name: https, port: ${LIVE_API_PORT}}]
endpoints: [{addresses: [${LIVE_API_ADDRESS}]}]"
  else
    LIVE_API_ADDRESS=127.0.0.1
    service="apiVersion: v1
kind: Service
metadata: {name: echo-operator-live-api, namespace: echo-operator-system}
spec:
  type: ExternalName
  externalName: ${LIVE_API_ADDRESS}
  ports: [{name: https, port: ${LIVE_API_PORT}}]"
  fi
  echo "${service}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.live.echo.dev}
spec:
  group: live.echo.dev
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {name: echo-operator-live-api, namespace: echo-operator-system, port: ${LIVE_API_PORT}}" |
    "${KUBECTL}" apply -f - >/dev/null
}

real_node=false
local_cluster=true
if [[ -n "${KUBECONFIG:-}" || -f "${HOME}/.kube/config" ]] && "${KUBECTL}" version --request-timeout=5s >/dev/null 2>&1; then
  say "Using the cluster of your kubeconfig ($("${KUBECTL}" config current-context 2>/dev/null || echo "\$KUBECONFIG"))"
  local_cluster=false
elif [[ -z "$(no_real_node)" ]]; then
  say "No reachable cluster configured: starting a local cluster with a real node (log: ${work}/simcluster.log)"
  start_local_cluster --real-node --images-env "${work}/images.env"
  # shellcheck source=/dev/null
  source "${work}/images.env"
  RELATED_IMAGE_ECHO="${ECHO_IMAGE}"
  real_node=true
else
  say "No reachable cluster configured: starting a local simulated cluster, where no container runs ($(no_real_node))"
  start_local_cluster
fi

say "Installing the CRDs"
"${KUBECTL}" apply --server-side -k config/crd

say "Starting the operator (logs: ${work}/manager.log)"
# The operator's namespace holds the key it signs its release records with.
"${KUBECTL}" create namespace echo-operator-system --dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null
live_api=()
if [[ "${local_cluster}" == true ]]; then
  register_live_api
  live_api=(--live-api-bind-address="${LIVE_API_ADDRESS}:${LIVE_API_PORT}" --live-api-cert-secret=echo-operator-live-api-cert)
fi
go build -o "${work}/manager" ./cmd/manager
RELATED_IMAGE_ECHO="${RELATED_IMAGE_ECHO:-}" "${work}/manager" --operator-namespace=echo-operator-system \
  --health-probe-bind-address=0 --metrics-bind-address=0 "${live_api[@]}" >"${work}/manager.log" 2>&1 &
manager="$!"
pids+=("${manager}")

say "Applying the sample Echo"
"${KUBECTL}" apply -f config/samples/echo_v1alpha1_echo.yaml
if ! "${KUBECTL}" wait --for=condition=Ready echo/echo-sample --timeout=300s; then
  tail -n 50 "${work}/manager.log"
  exit 1
fi
"${KUBECTL}" get echo -o wide
"${KUBECTL}" get deployments,services,pods -l app.kubernetes.io/instance=echo-sample
if [[ "${local_cluster}" == true ]]; then
  say "The live API (docs/live-api.md)"
  "${KUBECTL}" wait --for=condition=Available apiservice/v1alpha1.live.echo.dev --timeout=120s
  "${KUBECTL}" get echorevisions
fi

if [[ "${real_node}" == true ]]; then
  say "Forwarding 127.0.0.1:${ECHO_PORT} to the sample Echo's Service"
  # Like kubectl port-forward svc/echo-sample, but to a ready pod of the
  # Service for each connection, so the forward outlives rollouts.
  "${work}/simcluster" forward --kubeconfig "${KUBECONFIG}" --namespace default --service echo-sample --port 80 \
    --address "127.0.0.1:${ECHO_PORT}" >"${work}/port-forward.log" 2>&1 &
  forward="$!"
  pids+=("${forward}")
  for _ in $(seq 1 30); do
    grep -q "Forwarding from" "${work}/port-forward.log" && break
    kill -0 "${forward}" 2>/dev/null || { cat "${work}/port-forward.log"; exit 1; }
    sleep 1
  done
  echo "\$ curl http://127.0.0.1:${ECHO_PORT}/hello"
  if command -v curl >/dev/null; then
    curl -sS --noproxy '*' "http://127.0.0.1:${ECHO_PORT}/hello"
  else
    # No curl here: the same request through bash.
    exec 3<>"/dev/tcp/127.0.0.1/${ECHO_PORT}"
    printf 'GET /hello HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    sed '1,/^\r$/d' <&3
    exec 3<&-
  fi
  echo
  say "echo-operator is running, and echo-sample answers: curl http://127.0.0.1:${ECHO_PORT}/hello (the forward follows the Echo's rollouts). In another terminal: export KUBECONFIG=${KUBECONFIG}; kubectl get echoes, kubectl get echorevisions. Ctrl-C stops it all."
else
  say "echo-operator is running. Try: KUBECONFIG=${KUBECONFIG:-~/.kube/config} kubectl get echoes, kubectl get echorevisions. Ctrl-C stops it."
fi
wait "${manager}"
