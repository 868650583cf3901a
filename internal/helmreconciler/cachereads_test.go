package helmreconciler

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// recordingTransport stands for the API server: it records what reaches
// it and answers 200 with an empty object.
type recordingTransport struct{ paths []string }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(http.NoBody), Request: req}, nil
}

func TestCachedReads(t *testing.T) {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", ResourceVersion: "7"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32)}}
	cache := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(deployment).Build()
	mapper := meta.NewDefaultRESTMapper(nil)
	deploymentKind := appsv1.SchemeGroupVersion.WithKind("Deployment")
	serviceKind := corev1.SchemeGroupVersion.WithKind("Service")
	mapper.Add(deploymentKind, meta.RESTScopeNamespace)
	mapper.Add(serviceKind, meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)

	tests := []struct {
		name, method, path string
		trustMisses        bool
		// wantCode is the cached answer's status; 0 when the request
		// must reach the API server.
		wantCode int
	}{
		{"a cached object", "GET", "/apis/apps/v1/namespaces/team-a/deployments/web", false, http.StatusOK},
		{"a missing object before the first install", "GET", "/api/v1/namespaces/team-a/services/web", true, http.StatusNotFound},
		{"a missing object once released", "GET", "/api/v1/namespaces/team-a/services/web", false, 0},
		{"another namespace", "GET", "/apis/apps/v1/namespaces/team-b/deployments/web", true, 0},
		{"a kind the cache does not hold", "GET", "/api/v1/namespaces/team-a/secrets/web", true, 0},
		{"a list", "GET", "/apis/apps/v1/namespaces/team-a/deployments", true, 0},
		{"a status read", "GET", "/apis/apps/v1/namespaces/team-a/deployments/web/status", true, 0},
		{"a write", "PATCH", "/apis/apps/v1/namespaces/team-a/deployments/web", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			api := &recordingTransport{}
			reads := &cachedReads{next: api, cache: cache, mapper: mapper, scheme: clientgoscheme.Scheme,
				kinds: map[schema.GroupVersionKind]bool{deploymentKind: true, serviceKind: true}, namespace: "team-a", trustMisses: tt.trustMisses}

			resp, err := reads.RoundTrip(httptest.NewRequest(tt.method, tt.path, http.NoBody))
			g.Expect(err).NotTo(HaveOccurred())
			if tt.wantCode == 0 {
				g.Expect(api.paths).To(ConsistOf(tt.method+" "+tt.path), "the request reaches the API server")
				return
			}
			g.Expect(api.paths).To(BeEmpty(), "the cache answers")
			g.Expect(resp.StatusCode).To(Equal(tt.wantCode))
			g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			body := map[string]any{}
			g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
			if tt.wantCode == http.StatusOK {
				g.Expect(body).To(HaveKeyWithValue("kind", "Deployment"))
				g.Expect(body).To(HaveKeyWithValue("apiVersion", "apps/v1"))
				g.Expect(body["metadata"]).To(HaveKeyWithValue("resourceVersion", "7"))
			} else {
				g.Expect(body).To(HaveKeyWithValue("kind", "Status"))
				g.Expect(body).To(HaveKeyWithValue("reason", "NotFound"))
				g.Expect(body["details"]).To(HaveKeyWithValue("kind", "services"))
			}
		})
	}
}
