package releasetrust

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/chart"
)

const (
	// KeySecretName is the Secret, in the operator's namespace, holding
	// the key release records are signed with. Deleting it makes every
	// existing record untrusted (see docs/architecture.md#security-model).
	KeySecretName = "echo-operator-release-signing-key"
	// keyDataKey is the key of the signing key in that Secret.
	keyDataKey = "key"
)

// LoadOrCreateSigner reads the signing key from the operator's namespace,
// creating it with random bytes on first start. Replicas starting at once
// agree on one key: the create of all but one fails, and they read it.
func LoadOrCreateSigner(ctx context.Context, c client.Client, namespace string) (*Signer, error) {
	key, err := readKey(ctx, c, namespace)
	if apierrors.IsNotFound(err) {
		key, err = createKey(ctx, c, namespace)
		if apierrors.IsAlreadyExists(err) {
			key, err = readKey(ctx, c, namespace)
		}
	}
	if err != nil {
		return nil, err
	}
	return NewSigner(key)
}

func readKey(ctx context.Context, c client.Reader, namespace string) ([]byte, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: KeySecretName}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading the release signing key %s/%s: %w", namespace, KeySecretName, err)
	}
	return s.Data[keyDataKey], nil
}

func createKey(ctx context.Context, c client.Writer, namespace string) ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating the release signing key: %w", err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      KeySecretName,
			Labels:    map[string]string{chart.NameLabel: "echo-operator", chart.ComponentLabel: "release-signing-key"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{keyDataKey: key},
	}
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		return nil, fmt.Errorf("creating the release signing key %s/%s: %w", namespace, KeySecretName, err)
	}
	return key, nil
}
