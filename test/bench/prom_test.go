//go:build linux

package main

import (
	"strings"
	"testing"
)

const apiserverScrape = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="namespace",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="404",component="apiserver",dry_run="",group="apps",resource="deployments",scope="namespace",subresource="",verb="GET",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="namespace",subresource="status",verb="PUT",version="v1"} 4
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="apis",verb="GET",version=""} 5
# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.2345e+07
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="echo-controller",result="success"} 90
controller_runtime_reconcile_total{controller="echo-controller",result="error"} 3
controller_runtime_reconcile_total{controller="echo-status",result="success"} 50
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 10
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 1
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 4
`

func mustParse(t *testing.T, text string) metricFamilies {
	t.Helper()
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMetricSums(t *testing.T) {
	m := mustParse(t, apiserverScrape)
	if got := m.sum(reconcileTotalMetric, map[string]string{"controller": echoController}); got != 93 {
		t.Errorf("echo-controller reconciles = %v, want 93", got)
	}
	if got := m.sum(heapInuseMetric, nil); got != 12345000 {
		t.Errorf("heap in use = %v", got)
	}
	if got := m.sum("absent", nil); got != 0 {
		t.Errorf("an absent metric sums to %v", got)
	}
	by := m.sumBy(restClientRequestsMetric, "method")
	if by["GET"] != 11 || by["POST"] != 4 || len(by) != 2 {
		t.Errorf("requests by method = %v", by)
	}
}

func TestAPIServerRequests(t *testing.T) {
	c := apiserverRequests(mustParse(t, apiserverScrape))
	get := requestKey{Verb: "GET", Group: "apps", Resource: "deployments"}
	if c[get] != 10 {
		t.Errorf("GET deployments = %v, want 10 (codes summed)", c[get])
	}
	if got := c.total(nil); got != 21 {
		t.Errorf("total = %v, want 21", got)
	}
	if got := c.total(requestKey.isWrite); got != 6 {
		t.Errorf("writes = %v, want 6", got)
	}
	if got := c.total(objectWritesTo("deployments")); got != 0 {
		t.Errorf("object writes to deployments = %v, want 0 (status is left out)", got)
	}
	if got := c.total(objectWritesTo("secrets")); got != 2 {
		t.Errorf("object writes to secrets = %v, want 2", got)
	}
	discovery := requestKey{Verb: "GET", Subresource: "apis"}
	if c[discovery] != 5 || discovery.String() != "GET /apis" {
		t.Errorf("discovery: %v as %q", c[discovery], discovery.String())
	}
	status := requestKey{Verb: "PUT", Group: "apps", Resource: "deployments", Subresource: "status"}
	if s := status.String(); s != "PUT apps/deployments/status" {
		t.Errorf("String() = %q", s)
	}
	if s := (requestKey{Verb: "LIST", Resource: "secrets"}).String(); s != "LIST core/secrets" {
		t.Errorf("String() = %q", s)
	}
}

func TestRequestCountsArithmetic(t *testing.T) {
	a := requestKey{Verb: "GET", Resource: "pods"}
	b := requestKey{Verb: "LIST", Resource: "pods"}
	c := requestKey{Verb: "WATCH", Resource: "pods"}
	after := requestCounts{a: 10, b: 4}
	before := requestCounts{a: 4, c: 1}
	d := after.sub(before)
	if d[a] != 6 || d[b] != 4 || d[c] != -1 {
		t.Errorf("sub = %v", d)
	}
	if s := d.scale(0.5); s[a] != 3 || s[b] != 2 {
		t.Errorf("scale = %v", s)
	}
}

func TestRows(t *testing.T) {
	a := requestKey{Verb: "GET", Group: "apps", Resource: "deployments"}
	b := requestKey{Verb: "LIST", Resource: "secrets"}
	c := requestKey{Verb: "PATCH", Resource: "nodes", Subresource: "status"}
	d := requestKey{Verb: "POST", Resource: "events"}
	raw := requestCounts{a: 20, b: 60, c: 6.2, d: 5}
	base := requestCounts{c: 6, d: 1}
	got := rows(raw, base, 2)
	if len(got) != 2 || got[0].Request != "LIST core/secrets" || got[1].Request != "GET apps/deployments" {
		t.Fatalf("rows = %+v", got)
	}
	all := rows(raw, base, 0)
	for _, r := range all {
		if r.Request == c.String() {
			t.Errorf("a kind within half a request of its baseline is noise: %+v", r)
		}
	}
	if last := all[len(all)-1]; last.Request != "POST core/events" || last.Net != 4 || last.Baseline != 1 {
		t.Errorf("last row = %+v", last)
	}
}
