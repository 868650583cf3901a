// Package imagebuild builds container images from Dockerfiles with a real
// builder and serves them from a real registry, without a container engine:
// BuildKit's buildkitd (rootful, its OCI worker running steps with the real
// node's runc on the host's network) driven by buildctl, and the registry
// of distribution/distribution on 127.0.0.1 (`make image-tools` builds
// both; see docs/development.md#images).
//
// Nothing is pulled from outside. buildkitd's configuration mirrors
// docker.io and gcr.io to the local registry, where Start pushes stand-ins
// of the Dockerfile's base images, built by BuildKit too: golang:1.26 holds
// this machine's Go toolchain, a static busybox and CA certificates, and
// fetches Go modules from a module proxy that serves the host's module
// cache on a fixed loopback address (ModuleProxyAddr), filling it with the
// host's go command when a version is missing; distroless/static
// holds the nonroot user, /tmp and CA certificates, for every platform of
// BasePlatforms: BuildProjectFor builds the project's images for several
// platforms, an OCI index each, cross-compiled by the Dockerfile's builder
// stage on this machine, and ReadIndex reads every image of an index back,
// with the ELF machine of its binaries.
//
// buildkitd keeps its state (the layer cache) in a persistent directory, so
// a later build reuses what an earlier one built; the base stand-ins are
// dated SOURCE_DATE_EPOCH=0 so that their digests, and with them the cache
// of everything built on them, stay the same from run to run. One Env runs
// on a machine at a time: Start waits for a machine-wide lock.
//
// The real node pulls from the registry through realnode.Options'
// HTTPRegistries.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package imagebuild
