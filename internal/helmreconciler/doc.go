// Package helmreconciler is the library of the Helm side of the operator:
// one Helm release reconciler per entry of watches.yaml, each rendering its
// chart for every object of its kind (setup.go), registered by
// controllers/echo_release_controller.go.
// It must not import controllers, cmd or test/.
// Imported by cmd/manager/app, controllers and test/bench: the composition
// root takes its options, typed cache and chart kinds from it.
//
// On top of the stock reconciler it adds what the operator's Go side relies
// on, each in a file named for it:
//   - values.go: typed values for Echo;
//   - status.go: status writes that leave other controllers' fields alone
//     and keep the rendered manifest out of the API;
//   - pendingrelease.go: recovery of releases an interrupted operator (an
//     earlier version: this one writes no pending record) left pending;
//   - uninstallgate.go: no uninstall until the final backup is done;
//   - driftrepair.go: repair of the objects of a release that drifted or
//     were deleted, from the manifest's objects decoded once
//     (manifestmemo.go);
//   - actionclient.go: the action clients, which answer an unchanged
//     release from the cache (expectations.go, and the fingerprints and
//     cached records of releaserecords) and record Events;
//   - storage.go: the release storage, signed (see releasetrust) and
//     queried with the cache's help, reading only the revisions a caller
//     needs whole;
//   - valuesschema.go: the values checked against the chart's schema,
//     compiled once per chart, instead of on every render by Helm;
//   - recordwrites.go: the release records written in the layout of
//     Helm's Secrets driver, at a cheaper gzip level, each revision once in
//     its final state (never pending);
//   - manifestguard.go: what a release may touch, the chart's kinds in its
//     own namespace;
//   - watches.go and typedcache.go: the watches of the chart's objects and
//     the one typed cache shared with the Go controllers.
package helmreconciler
