// Package alerts holds no code of its own: its tests keep the operator's
// alerts, config/prometheus/prometheusrule.yaml, valid and tested. The rule
// groups of the PrometheusRule must pass `promtool check rules` and the
// unit tests of config/prometheus/tests/alerts_test.yaml, which must make
// every alert fire in one case and stay silent in another; every alert must
// carry a severity, a summary, a description and the runbook_url of its
// runbook, docs/runbooks/<alert>.md, which must exist and be listed in
// docs/runbooks/README.md.
// Tests only: nothing imports it.
//
// promtool is the one `make prometheus` builds, found through the PROMTOOL
// environment variable that `make test` sets; without it the promtool
// tests are skipped (they fail under CI). The other checks need nothing:
//
//	go test ./test/alerts/
//	PROMTOOL=$(hack/build-prometheus.sh build | sed -n 's/^PROMTOOL=//p') go test ./test/alerts/
package alerts
