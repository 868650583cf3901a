// Package chart loads the echo Helm chart and renders it offline, the way the
// operator installs it: release name and namespace are those of the Echo
// resource, the values come from the operator's value translator, and the
// values are checked against the chart's values.schema.json.
// It must not import controllers, cmd or test/: they build on it.
package chart
