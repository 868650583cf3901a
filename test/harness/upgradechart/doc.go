// Package upgradechart writes what a new release of the operator brings
// along for the Echo chart: a copy of helm-charts/echo with another
// appVersion (and chart version), optionally with a template change that
// changes every Echo's Deployment, and a watches file that points the
// manager at the copy (WATCHES_FILE).
// Test gear: test/e2e and the benchmark import it, never the product.
package upgradechart
