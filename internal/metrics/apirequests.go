package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// apiRequests counts the operator's requests to kube-apiserver by kind,
// labelled as kube-apiserver's apiserver_request_total is, so that the two
// compare: which of the cluster's requests the operator sends.
var apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Name:      "kube_api_requests_total",
	Help:      "Requests the operator sent to kube-apiserver, by verb (GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE), group, resource and subresource; a request outside the resources (discovery, /version) has its path as subresource and no resource.",
}, []string{"verb", "group", "resource", "subresource"})

// requestInfos parses request paths as kube-apiserver does.
var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// CountAPIRequests makes every client built from cfg count its requests
// in echo_operator_kube_api_requests_total.
func CountAPIRequests(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingRoundTripper{next: rt} })
}

type countingRoundTripper struct{ next http.RoundTripper }

func (c countingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	apiRequests.WithLabelValues(requestLabels(req)...).Inc()
	return c.next.RoundTrip(req)
}

// requestLabels are the verb, group, resource and subresource of req, in
// the form of apiserver_request_total.
func requestLabels(req *http.Request) []string {
	info, err := requestInfos.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return []string{req.Method, "", "", req.URL.Path}
	}
	return []string{requestVerb(info.Verb, req), info.APIGroup, info.Resource, info.Subresource}
}

// requestVerb is kube-apiserver's name for a request's verb in its
// metrics.
func requestVerb(verb string, req *http.Request) string {
	switch verb {
	case "create":
		return http.MethodPost
	case "update":
		return http.MethodPut
	case "patch":
		if strings.HasPrefix(req.Header.Get("Content-Type"), string(types.ApplyPatchType)) {
			return "APPLY"
		}
		return http.MethodPatch
	case "deletecollection":
		return http.MethodDelete
	}
	return strings.ToUpper(verb)
}
