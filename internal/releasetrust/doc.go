// Package releasetrust authenticates the Helm release records the operator
// writes, so that no record it did not write is ever acted on, and the Jobs
// it creates (jobs.go), with the same key.
// It must not import controllers, cmd or test/: they build on it.
//
// Helm keeps a release's history in Secrets of the release's namespace,
// and decides what to create, repair and delete from the manifests stored
// there. Anyone who can write Secrets in that namespace, a tenant with the
// edit role included, could otherwise plant a record whose manifest lists
// objects of other namespaces or other kinds, and the operator, which holds
// rights the tenant does not, would act on it. So every record the operator
// writes carries an HMAC-SHA256 of what steers Helm (its namespace, name,
// labels and encoded release), keyed with a secret that lives in the
// operator's own namespace; a record whose signature does not verify is
// invisible to Helm and to the cache's fast path.
package releasetrust
