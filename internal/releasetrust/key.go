package releasetrust

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

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
	// OwnerSignedSinceAnnotation, on that Secret, is when the operator
	// first signed records with their owner's UID (RFC 3339): records of
	// the legacy scheme verify only if created before it.
	OwnerSignedSinceAnnotation = "echo.dev/owner-signed-since"
)

// LoadOrCreateSigner reads the signing key from the operator's namespace,
// creating it with random bytes on first start. Replicas starting at once
// agree on one key: the create of all but one fails, and they read it.
// The first start of a version that signs the owner records when it did.
func LoadOrCreateSigner(ctx context.Context, c client.Client, namespace string) (*Signer, error) {
	s, err := readKey(ctx, c, namespace)
	if apierrors.IsNotFound(err) {
		s, err = createKey(ctx, c, namespace)
		if apierrors.IsAlreadyExists(err) {
			s, err = readKey(ctx, c, namespace)
		}
	}
	if err != nil {
		return nil, err
	}
	since, err := ensureOwnerSignedSince(ctx, c, s)
	if err != nil {
		return nil, err
	}
	return newSigner(s.Data[keyDataKey], since)
}

// ensureOwnerSignedSince returns the time of OwnerSignedSinceAnnotation,
// setting it to now where the key Secret lacks it. The patch carries the
// Secret's resource version: of replicas starting at once, one sets it,
// and the others read that.
func ensureOwnerSignedSince(ctx context.Context, c client.Client, s *corev1.Secret) (time.Time, error) {
	if v, ok := s.Annotations[OwnerSignedSinceAnnotation]; ok {
		since, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("the release signing key %s/%s: annotation %s: %w", s.Namespace, s.Name, OwnerSignedSinceAnnotation, err)
		}
		return since, nil
	}
	patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, OwnerSignedSinceAnnotation, time.Now().UTC().Format(time.RFC3339))
	err := c.Patch(ctx, s, patch)
	if apierrors.IsConflict(err) {
		if s, err = readKey(ctx, c, s.Namespace); err == nil {
			return ensureOwnerSignedSince(ctx, c, s)
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("recording when release records were first signed with their owner in %s/%s: %w", s.Namespace, s.Name, err)
	}
	return ensureOwnerSignedSince(ctx, c, s)
}

func readKey(ctx context.Context, c client.Reader, namespace string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: KeySecretName}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading the release signing key %s/%s: %w", namespace, KeySecretName, err)
	}
	return s, nil
}

func createKey(ctx context.Context, c client.Writer, namespace string) (*corev1.Secret, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating the release signing key: %w", err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        KeySecretName,
			Labels:      map[string]string{chart.NameLabel: "echo-operator", chart.ComponentLabel: "release-signing-key"},
			Annotations: map[string]string{OwnerSignedSinceAnnotation: time.Now().UTC().Format(time.RFC3339)},
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
	return s, nil
}
