package storagesecrets

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Found is the metadata of the Secrets of one namespace a storage names,
// by name; a Secret that does not exist has none.
type Found map[string]*metav1.PartialObjectMetadata

// Read reads the metadata of the Secrets names of namespace from api (the
// API server: the operator neither caches these Secrets nor reads their
// data for this).
func Read(ctx context.Context, api client.Reader, namespace string, names []string) (Found, error) {
	found := Found{}
	for _, name := range names {
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading the labels of Secret %s: %w", name, err)
		default:
			found[name] = secret
		}
	}
	return found, nil
}

// Missing returns, in order, the names that do not exist.
func (f Found) Missing(names []string) []string {
	var missing []string
	for _, name := range names {
		if f[name] == nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// NotOptedIn returns, in order, the names that exist without
// echov1alpha1.StorageSecretLabel.
func (f Found) NotOptedIn(names []string) []string {
	var refused []string
	for _, name := range names {
		if s := f[name]; s != nil && !echov1alpha1.StorageSecretOptedIn(s.Labels) {
			refused = append(refused, name)
		}
	}
	return refused
}

// Usable checks a Secret read whole, just before its data is used: it
// carries echov1alpha1.StorageSecretLabel and, when endpoint is not empty
// (the Secret's data goes there: an SSE-C key), cluster or the Secret's
// echov1alpha1.StorageEndpointsAnnotation lists it. Checking the very
// object whose data is used leaves no gap in which another Secret of the
// same name could take its place.
func Usable(secret *corev1.Secret, endpoint string, cluster ClusterEndpoints) error {
	if !echov1alpha1.StorageSecretOptedIn(secret.Labels) {
		return &NotOptedInError{Namespace: secret.Namespace, Name: secret.Name}
	}
	if endpoint == "" {
		return nil
	}
	if refused := cluster.Refusal("secret", secret, endpoint); refused != nil {
		return refused
	}
	return nil
}

// NotOptedInError is a Secret without echov1alpha1.StorageSecretLabel.
type NotOptedInError struct{ Namespace, Name string }

func (e *NotOptedInError) Error() string {
	return fmt.Sprintf("the Secret %q has no label %[2]s=true, which echo-operator requires before it reads a Secret as storage credentials, CA bundle or SSE-C key: "+
		"if it holds this storage's, label it (kubectl label secret -n %[3]s %[4]s %[2]s=true); if not, name a Secret that has the label",
		e.Name, echov1alpha1.StorageSecretLabel, e.Namespace, e.Name)
}
