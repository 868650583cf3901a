// Package metrics exposes the state of the operator's objects as Prometheus
// metrics, on the manager's metrics endpoint: how many Echoes are Ready and
// why not, and, per Echo that has backups, when its last backup succeeded
// and when its next scheduled one is due.
// It must not import controllers, cmd or test/: they build on it.
//
// The values are read from the manager's cache at each scrape, so they are
// always the cluster's state: nothing is kept in memory that a restart
// would lose or that could drift from the objects.
package metrics
