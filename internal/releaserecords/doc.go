// Package releaserecords owns Helm's release records as the operator caches
// and reads them: the cache's transform and index, the render fingerprint,
// the revision history, and whole records read and verified.
// It must not import internal/helmreconciler or controllers: they, and the
// live API, build on it.
package releaserecords
