// Package olmnode installs the operator through Operator Lifecycle Manager
// (OLM) on a local cluster with a real node, as users on a plain cluster
// do: OLM itself runs as pods from images built here with its own
// Dockerfile, and installs the operator from a catalog image served by a
// catalog pod, unpacking the bundle image in a Job; the operator's pods
// then reconcile Echoes whose pods serve. It covers install, upgrade
// through `replaces` and uninstall, and every install mode of the CSV.
// It also installs OLM v1 (operator-controller and catalogd, as pods from
// images built here) and the operator through it, with a ClusterCatalog
// and a ClusterExtension. Beside OLM, it installs the operator with the
// install manifest (`make build-installer`, naming the images built here
// by digest) and checks that deleting it leaves nothing.
//
// The images are built with BuildKit (test/harness/imagebuild) into a
// registry on loopback, which the node's containerd uses as the mirror of
// every registry, so the images the bundle and OLM's manifests name on
// quay.io come from it and no pull leaves the machine.
// Tests only: nothing imports it.
package olmnode
