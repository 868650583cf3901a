// Package storagesecrets holds the rules both the controllers (before a
// data mover Job) and the live API (before a listing) apply to what a
// backup storage names: whether its Secrets exist and opted in as storage
// credentials (echov1alpha1.StorageSecretLabel), and where a
// ServiceAccount's token or an SSE-C key may be sent (its owner's
// echov1alpha1.StorageEndpointsAnnotation, or the operator
// administrator's ClusterEndpoints). It imports only the API types. It
// must not import controllers, cmd or test/: they build on it.
package storagesecrets
