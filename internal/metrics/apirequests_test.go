package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRequestLabels(t *testing.T) {
	tests := []struct {
		method, path, contentType string
		want                      []string
	}{
		{"GET", "/api/v1/namespaces/ns/secrets/web.v1", "", []string{"GET", "", "secrets", ""}},
		{"GET", "/api/v1/namespaces/ns/secrets", "", []string{"LIST", "", "secrets", ""}},
		{"GET", "/apis/apps/v1/deployments?watch=true", "", []string{"WATCH", "apps", "deployments", ""}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", "", []string{"POST", "apps", "deployments", ""}},
		{"PUT", "/apis/echo.dev/v1alpha1/namespaces/ns/echoes/web", "", []string{"PUT", "echo.dev", "echoes", ""}},
		{"PATCH", "/apis/echo.dev/v1alpha1/namespaces/ns/echoes/web/status", "application/apply-patch+yaml", []string{"APPLY", "echo.dev", "echoes", "status"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/web", "application/merge-patch+json", []string{"PATCH", "apps", "deployments", ""}},
		{"DELETE", "/api/v1/namespaces/ns/pods", "", []string{"DELETE", "", "pods", ""}},
		{"GET", "/api/v1/namespaces/ns", "", []string{"GET", "", "namespaces", ""}},
		{"PATCH", "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.live.echo.dev", "application/merge-patch+json", []string{"PATCH", "apiregistration.k8s.io", "apiservices", ""}},
		{"GET", "/version", "", []string{"GET", "", "", "/version"}},
		{"GET", "/apis", "", []string{"GET", "", "", "/apis"}},
		{"GET", "/apis/apps/v1", "", []string{"GET", "", "", "/apis/apps/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, http.NoBody)
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			NewWithT(t).Expect(requestLabels(req)).To(Equal(tt.want))
		})
	}
}
