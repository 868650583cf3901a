// Command images builds the project's images from its Dockerfile with
// BuildKit, without a container engine, and pushes them to a registry on
// 127.0.0.1 (`make images`). A development command: it runs
// test/harness/imagebuild, and nothing imports it. Usage:
//
//	go run ./hack/images -version 0.1.0 [-tag v0.1.0] [-platforms linux/amd64,linux/arm64] [-serve]
//
// It prints each image's reference and digest. With -platforms (`make
// docker-buildx`), each image is an OCI index of a manifest per platform,
// cross-compiled by the Dockerfile's builder stage on this machine, and
// the digest printed is the index's, once every manifest of it has been
// read back and checked (imagebuild.CheckIndex): its platform, its
// configuration's and its binary's ELF machine agree. The registry's storage
// (-registry-dir, default $XDG_CACHE_HOME/echo-operator/registry) and
// buildkitd's state (imagebuild.DefaultStateDir) are kept, so a second run
// reuses the layers of the first; the registry listens on a port chosen at
// each run. -serve keeps it serving until interrupted, for a client to pull
// from. It needs root on Linux, and the binaries that `make image-tools
// node` build, named by the environment variables the Makefile sets.
package main
