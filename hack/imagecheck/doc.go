// Command imagecheck checks the images of echo-operator without a container
// engine.
// A module of its own: it imports nothing of the operator, and nothing
// imports it.
//
//	imagecheck lint    parse the Dockerfile and bundle.Dockerfile (when
//	                   present) with BuildKit's parser, run BuildKit's
//	                   checks and the repository's image rules
//	imagecheck layout  assemble the operator image as an OCI image layout
//	                   from the Dockerfile's operator stage, then verify it
//	imagecheck verify  verify an OCI image layout of the operator image
//
// Run `imagecheck <command> -h` for the flags.
package main
