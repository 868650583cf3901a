// Package storagesecrets holds the rules both the controllers (before a
// data mover Job) and the live API (before a listing) apply to what a
// backup storage names: whether its Secrets exist and opted in as storage
// credentials (echov1alpha1.StorageSecretLabel), and where the owner of a
// ServiceAccount or an SSE-C key allowed it to be sent
// (echov1alpha1.StorageEndpointsAnnotation). It imports only the API
// types. It must not import controllers, cmd or test/: they build on it.
package storagesecrets
