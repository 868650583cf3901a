package liveapi

import (
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
)

// DefaultUserInFlight is how many requests of one user the live API
// serves at once; the user's next one is refused with 429 Too Many
// Requests and a Retry-After until one ends. A slow request (a listing of
// storage that does not answer takes up to 20 s) holds its slot, so one
// user cannot take the server's slots from the others, whatever
// kube-apiserver's priority and fairness let through.
const DefaultUserInFlight = 4

// userInFlightRetryAfter is the Retry-After, in seconds, of a refusal.
const userInFlightRetryAfter = 1

// userInFlight counts the requests in flight per user.
type userInFlight struct {
	limit int
	mu    sync.Mutex
	users map[string]int
}

func newUserInFlight(limit int) *userInFlight {
	return &userInFlight{limit: limit, users: map[string]int{}}
}

// acquire takes a slot of user, unless all of its slots are taken.
func (u *userInFlight) acquire(user string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users[user] >= u.limit {
		return false
	}
	u.users[user]++
	return true
}

func (u *userInFlight) release(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users[user]--; u.users[user] <= 0 {
		delete(u.users, user)
	}
}

// withUserInFlight serves handler's requests, an authenticated user's,
// with at most limit of them in flight per user name.
func withUserInFlight(handler http.Handler, limit int) http.Handler {
	inFlight := newUserInFlight(limit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := genericapirequest.UserFrom(r.Context())
		if !ok {
			// Authentication runs before: fail closed all the same.
			responsewriters.ErrorNegotiated(apierrors.NewUnauthorized("no user"), Codecs, livev1alpha1.GroupVersion, w, r)
			return
		}
		if !inFlight.acquire(u.GetName()) {
			err := apierrors.NewTooManyRequests(fmt.Sprintf("the live API serves at most %d requests of one user at once: retry when one has ended", limit), userInFlightRetryAfter)
			responsewriters.ErrorNegotiated(err, Codecs, livev1alpha1.GroupVersion, w, r)
			return
		}
		defer inFlight.release(u.GetName())
		handler.ServeHTTP(w, r)
	})
}
