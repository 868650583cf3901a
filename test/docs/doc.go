// Package docs holds no code of its own: its test keeps the documentation
// true to the repository. The layout table of docs/development.md must have
// a row for every directory of the repository that holds Go files, and no
// row for a path that does not exist; the RBAC table of
// docs/architecture.md must list every resource and verb that
// config/rbac/role.yaml grants, and nothing it does not; and every kubectl
// command that README.md or a page under docs/ shows must be run by a test
// of test/e2e, which declares it with documented(...), or be excluded with
// its reason (kubectl_test.go). The ClusterRole docs/install.md gives OLM
// v1's installer must cover every rule the bundle grants (its CSV's
// permissions and clusterPermissions, and its ClusterRoles).
// Tests only: nothing imports it; it reads the repository's files.
//
// It also checks the Grafana dashboard, config/grafana/echo-operator.json:
// valid JSON, unique panel ids and variable names, every query on the
// ${datasource} variable, and every metric a query reads listed in a
// table of docs/metrics.md.
//
// The test needs no cluster and runs with or without -short:
//
//	go test ./test/docs/
package docs
