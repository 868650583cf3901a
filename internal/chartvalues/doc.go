// Package chartvalues is the values contract of helm-charts/echo: the
// values an Echo renders into (FromEcho), and the spec that renders given
// values (Values.Spec), with which a rollback returns an Echo to an
// earlier release's values. It is pure and must import nothing of Helm,
// controllers or cmd: the kubectl plugin and the Helm reconciler build on it.
package chartvalues
