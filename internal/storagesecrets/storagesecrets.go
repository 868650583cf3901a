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

// NotOptedIn returns, in order, the Secrets among names in namespace that
// exist without echov1alpha1.StorageSecretLabel. It reads only their
// metadata, from api (the API server: the operator neither caches Secrets
// nor reads their data for this). A Secret that does not exist is not
// returned: whoever would read it reports it missing.
func NotOptedIn(ctx context.Context, api client.Reader, namespace string, names []string) ([]string, error) {
	var refused []string
	for _, name := range names {
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading the labels of Secret %s: %w", name, err)
		case !echov1alpha1.StorageSecretOptedIn(secret.Labels):
			refused = append(refused, name)
		}
	}
	return refused, nil
}
