# Images of echo-operator, built from one builder stage:
#   docker build .                      the operator (the last stage)
#   docker build --target echo-server . the echo server its Echoes run
# Cross-build with `docker buildx build --platform linux/arm64 ...`: the Go
# toolchain runs natively (the builder stage is pulled for the build
# platform) and cross-compiles for TARGETOS/TARGETARCH.
# Without a container engine, `make images` builds both with BuildKit into
# a registry on 127.0.0.1 (docs/development.md#building-and-serving-images).

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Dependencies first, so that this layer stays cached until go.mod or
# go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/

# Static binaries (no cgo), so they run on distroless/static. Go's build
# cache is a cache mount: kept by the builder between builds, never in a
# layer, so a change of the sources recompiles only what it touches.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o echo-server ./cmd/echo-server
# The version the manager logs at start (main.version): declared here, so
# that only the manager's link depends on it.
ARG VERSION=0.1.0
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o manager ./cmd/manager

# The echo server, the workload of every Echo (RELATED_IMAGE_ECHO).
FROM gcr.io/distroless/static:nonroot AS echo-server
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="echo-server" \
      org.opencontainers.image.description="HTTP echo server run by echo-operator for each Echo resource" \
      org.opencontainers.image.source="https://github.com/echo-operator/echo-operator" \
      org.opencontainers.image.version="${VERSION}"
WORKDIR /
COPY --from=builder /workspace/echo-server /echo-server
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/echo-server"]

# The operator. It stays the last stage, so a plain `docker build .` builds it.
FROM gcr.io/distroless/static:nonroot AS operator
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="echo-operator" \
      org.opencontainers.image.description="Kubernetes operator that runs Echo HTTP services through the echo Helm chart" \
      org.opencontainers.image.source="https://github.com/echo-operator/echo-operator" \
      org.opencontainers.image.version="${VERSION}"
# The manager reads watches.yaml from its working directory, and the chart
# paths in it (helm-charts/echo) are relative to it too.
WORKDIR /
COPY --from=builder /workspace/manager /manager
COPY watches.yaml /watches.yaml
COPY helm-charts/ /helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
