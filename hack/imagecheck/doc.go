// Command imagecheck checks the Dockerfiles of echo-operator for what no
// builder checks: BuildKit's lint checks, run through its Dockerfile
// frontend as a library, and the repository's image and bundle rules. The
// images themselves are built by BuildKit (make images, and the tests of
// test/harness/imagebuild, which read them back from a registry).
// A module of its own: it imports nothing of the operator, and nothing
// imports it.
//
//	imagecheck lint    parse the Dockerfile and bundle.Dockerfile (when
//	                   present) with BuildKit's parser, run BuildKit's
//	                   checks and the repository's image rules
//
// Run `imagecheck <command> -h` for the flags.
package main
