// Package docs holds no code of its own: its test keeps two tables of the
// documentation true to the repository. The layout table of
// docs/development.md must have a row for every directory of the
// repository that holds Go files, and no row for a path that does not
// exist; the RBAC table of docs/architecture.md must list every resource
// and verb that config/rbac/role.yaml grants, and nothing it does not.
//
// The test needs no cluster and runs with or without -short:
//
//	go test ./test/docs/
package docs
