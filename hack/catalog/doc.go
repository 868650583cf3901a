// Command catalog renders the operator's file-based catalog from its
// template with `opm alpha render-template`. A development command: it
// imports test/harness/testcerts for its registry's certificate, and
// nothing imports it. Usage:
//
//	go run ./hack/catalog -opm OPM -bundle-image BUNDLE_IMG -o catalog/echo-operator/catalog.yaml
//
// The template (-template, default catalog-template.yaml) is an opm basic
// template: the package, its channels and their entries as the catalog has
// them, and each bundle by its image. opm pulls every bundle image to render
// it; the bundles travel as olm.csv.metadata, OLM unpacks their manifests
// from the image. The image of bundle/ (-bundle-dir) is rendered before it
// is pushed, so this command serves it to opm itself: it packs the bundle
// directory into the image bundle.Dockerfile builds and serves it from a
// read-only registry on 127.0.0.1, which a registries.conf of its own makes
// the mirror of the bundle image's repository. Other images, those of
// earlier releases, are pulled from their registry, which opm falls back
// to; the command fails unless opm read the image of bundle/ from its
// mirror.
//
// First it checks that the template agrees with bundle/: the template names
// the bundle image; the CSV's entry is in the channels of the bundle's
// metadata/annotations.yaml, with its upgrade edges (spec.replaces,
// spec.skips and the olm.skipRange annotation); the package's default
// channel is the bundle's, and its icon the CSV's; and that every image of
// -bundle-images (BUNDLE_IMGS, the bundles the catalog must hold) is an
// olm.bundle entry of the template.
package main
