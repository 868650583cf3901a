// Package storagesecrets reads whether the Secrets a backup storage names
// opted in as storage credentials (echov1alpha1.StorageSecretLabel): the
// one check the controllers make before a data mover Job and the live API
// makes before a listing. It imports only the API types.
// It must not import controllers, cmd or test/: they build on it.
package storagesecrets
