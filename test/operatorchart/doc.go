// Package operatorchart checks the operator's Helm chart,
// helm-charts/echo-operator, without a cluster: rendered with Helm's SDK
// as `helm install` renders it, with its default values it holds exactly
// the objects `make deploy` applies (config/default, built here with
// kustomize's library), equal but for their labels, the Namespace (Helm's
// --create-namespace) and the CRDs, which are its crds/ and equal
// config/crd/bases; the manager's and the live API's ClusterRoles have the
// rules generated from the RBAC markers; switched on, its monitoring
// objects are those of config/prometheus and config/grafana; each value
// does what values.yaml says; and values.schema.json refuses values the
// chart cannot use. The real node's suite (test/olmnode) installs,
// upgrades and uninstalls it with the helm CLI.
// Tests only: nothing imports it. It runs with or without -short:
//
//	go test ./test/operatorchart/
package operatorchart
