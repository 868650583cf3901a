package liveapi

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestUserInFlight checks that a user's requests past the bound are
// refused with 429 and a Retry-After while the user's slow ones run, that
// another user is served meanwhile, and that the user is served again
// once one has ended.
func TestUserInFlight(t *testing.T) {
	g := NewWithT(t)
	const limit = 3
	entered, release := make(chan string), make(chan struct{})
	handler := withUserInFlight(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := genericapirequest.UserFrom(r.Context())
		if u.GetName() == "alice" {
			entered <- u.GetName()
			<-release
		}
	}), limit)
	as := func(name string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/apis/live.echo.dev/v1alpha1/storedbackups", nil)
		r = r.WithContext(genericapirequest.WithUser(r.Context(), &user.DefaultInfo{Name: name}))
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w
	}

	var slow sync.WaitGroup
	codes := make(chan int, limit)
	for range limit {
		slow.Go(func() { codes <- as("alice").Code })
		<-entered
	}
	refused := as("alice")
	g.Expect(refused.Code).To(Equal(http.StatusTooManyRequests), refused.Body.String())
	g.Expect(refused.Header().Get("Retry-After")).To(Equal("1"))
	g.Expect(refused.Body.String()).To(ContainSubstring("at most 3 requests of one user at once"))
	g.Expect(as("bob").Code).To(Equal(http.StatusOK), "another user is served meanwhile")

	release <- struct{}{}
	g.Expect(<-codes).To(Equal(http.StatusOK))
	slow.Go(func() { codes <- as("alice").Code })
	<-entered // the slot freed serves the user again, and no more
	g.Expect(as("alice").Code).To(Equal(http.StatusTooManyRequests))
	close(release)
	slow.Wait()
	close(codes)
	for code := range codes {
		g.Expect(code).To(Equal(http.StatusOK))
	}
	g.Expect(as("bob").Code).To(Equal(http.StatusOK))
}

func TestUserInFlightFailsClosedWithoutUser(t *testing.T) {
	g := NewWithT(t)
	served := false
	handler := withUserInFlight(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }), 1)
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/apis/live.echo.dev/v1alpha1/storedbackups", nil))
	g.Expect(w.Code).To(Equal(http.StatusUnauthorized))
	g.Expect(served).To(BeFalse())
}
