// Package liveapi is the operator's aggregated API server: the
// live.echo.dev group of read-only resources computed when they are asked
// for (see api/live/v1alpha1). kube-apiserver proxies requests for the
// group to it, through an APIService, with the user in request headers;
// the server authenticates kube-apiserver's front proxy alone, by its
// client certificate (frontproxy.go: no bearer token, no other
// certificate, no anonymous request), authorizes every request by a
// SubjectAccessReview, as any aggregated API server does, bounds each
// user's requests in flight (userinflight.go), then checks that the user
// may read the echo.dev objects a live resource reveals.
// It lists a location's backups with internal/backupstore and must not
// import the data mover (internal/datamover), controllers, cmd or test/.
package liveapi
