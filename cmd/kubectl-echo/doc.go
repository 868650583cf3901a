// Command kubectl-echo is the kubectl plugin of echo-operator: `kubectl
// echo status|backup|restore|history|rollback|backups`, installed on the
// PATH (docs/kubectl-plugin.md). It only wires internal/kubectlecho to the
// process's streams, and must not import controllers or the manager.
package main
