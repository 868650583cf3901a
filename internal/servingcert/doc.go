// Package servingcert keeps the live API's serving certificate when no one
// else does (the `make deploy` install; OLM issues its own): a private CA
// and a certificate it signs, both in one Secret of the operator's
// namespace. The leader issues and renews them (Rotator) and writes the
// CA into the APIService's caBundle, which kube-apiserver verifies the
// live API against; every replica serves the certificate from the Secret
// as it changes (SecretProvider).
// It must not import controllers, cmd or test/: they build on it.
package servingcert
