//go:build linux

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric names read by the benchmark.
const (
	apiserverRequestsMetric = "apiserver_request_total"
	// operatorRequestsMetric is echo-operator's count of its own requests,
	// labelled as apiserverRequestsMetric is.
	operatorRequestsMetric   = "echo_operator_kube_api_requests_total"
	restClientRequestsMetric = "rest_client_requests_total"
	reconcileTotalMetric     = "controller_runtime_reconcile_total"
	heapAllocMetric          = "go_memstats_heap_alloc_bytes"
	heapInuseMetric          = "go_memstats_heap_inuse_bytes"
)

// metricFamilies is one scrape of a Prometheus text endpoint, by name.
type metricFamilies map[string]*dto.MetricFamily

// parseMetrics parses the Prometheus text exposition format.
func parseMetrics(r io.Reader) (metricFamilies, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return mfs, nil
}

// sum adds up the values (counter, gauge or untyped) of the named metric's
// series whose labels include every pair of match.
func (m metricFamilies) sum(name string, match map[string]string) float64 {
	mf, ok := m[name]
	if !ok {
		return 0
	}
	var total float64
	for _, s := range mf.GetMetric() {
		if labelsMatch(s, match) {
			total += value(s)
		}
	}
	return total
}

// sumBy adds up the named metric's series, grouped by the value of one label.
func (m metricFamilies) sumBy(name, label string) map[string]float64 {
	out := map[string]float64{}
	mf, ok := m[name]
	if !ok {
		return out
	}
	for _, s := range mf.GetMetric() {
		out[labelValue(s, label)] += value(s)
	}
	return out
}

func labelsMatch(s *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		if labelValue(s, k) != v {
			return false
		}
	}
	return true
}

func labelValue(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Untyped != nil:
		return s.Untyped.GetValue()
	}
	return 0
}

// requestKey identifies a kind of API request: what apiserver_request_total
// is labelled with, less the code, scope, version and client component.
type requestKey struct {
	Verb        string `json:"verb"`
	Group       string `json:"group"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
}

// String reads like "PATCH apps/deployments/status"; the core group is
// "core". Requests for URLs outside the API's resources (discovery, health
// checks) carry their path as subresource and read like "GET /apis".
func (k requestKey) String() string {
	if k.Resource == "" {
		return k.Verb + " /" + strings.TrimPrefix(k.Subresource, "/")
	}
	s := k.Verb + " " + cmp.Or(k.Group, "core") + "/" + k.Resource
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	return s
}

// isWrite reports whether the verb changes state.
func (k requestKey) isWrite() bool {
	switch k.Verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// requestCounts counts API requests by kind.
type requestCounts map[requestKey]float64

// apiserverRequests reads apiserver_request_total, summed over the labels
// requestKey leaves out. Requests for non-resource URLs are kept: they
// include an operator's discovery requests. kube-apiserver does not count
// the scrapes of /metrics. A long-running request (WATCH) is counted when
// it ends, not when it starts.
func apiserverRequests(m metricFamilies) requestCounts {
	return requestsOf(m, apiserverRequestsMetric)
}

// requestsOf reads a counter of requests labelled verb, group, resource
// and subresource, summed over its other labels.
func requestsOf(m metricFamilies, metricName string) requestCounts {
	out := requestCounts{}
	mf, ok := m[metricName]
	if !ok {
		return out
	}
	for _, s := range mf.GetMetric() {
		k := requestKey{
			Verb:        labelValue(s, "verb"),
			Group:       labelValue(s, "group"),
			Resource:    labelValue(s, "resource"),
			Subresource: labelValue(s, "subresource"),
		}
		out[k] += value(s)
	}
	return out
}

// sub returns c - base, key by key.
func (c requestCounts) sub(base requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		out[k] = v - base[k]
	}
	for k, v := range base {
		if _, ok := c[k]; !ok {
			out[k] = -v
		}
	}
	return out
}

// scale returns c with every count multiplied by f.
func (c requestCounts) scale(f float64) requestCounts {
	out := make(requestCounts, len(c))
	for k, v := range c {
		out[k] = v * f
	}
	return out
}

// total adds up the counts of the kinds keep accepts (all when nil).
func (c requestCounts) total(keep func(requestKey) bool) float64 {
	var t float64
	for k, v := range c {
		if keep == nil || keep(k) {
			t += v
		}
	}
	return t
}

// requestRow is one kind of request in a report: its raw count in a window,
// the count the cluster's baseline rate predicts for that window, and the
// difference.
type requestRow struct {
	Request  string  `json:"request"`
	Count    float64 `json:"count"`
	Baseline float64 `json:"baseline"`
	Net      float64 `json:"net"`
}

// rows lists the kinds of requests of raw, with base as the expected
// baseline, by decreasing net count (then name), at most limit rows (all
// when limit <= 0). Kinds with a net count under 0.5 either way are left
// out: they are the cluster's own traffic.
func rows(raw, base requestCounts, limit int) []requestRow {
	var out []requestRow
	keys := map[requestKey]bool{}
	for k := range raw {
		keys[k] = true
	}
	for k := range base {
		keys[k] = true
	}
	for k := range keys {
		r := requestRow{Request: k.String(), Count: raw[k], Baseline: base[k]}
		r.Net = r.Count - r.Baseline
		if r.Net > -0.5 && r.Net < 0.5 {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b requestRow) int {
		if c := cmp.Compare(b.Net, a.Net); c != 0 {
			return c
		}
		return strings.Compare(a.Request, b.Request)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
