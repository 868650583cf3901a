package releasetrust

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestLoadOrCreateSigner(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()

	first, err := LoadOrCreateSigner(ctx, c, "echo-operator-system")
	if err != nil {
		t.Fatal(err)
	}
	stored := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "echo-operator-system", Name: KeySecretName}, stored); err != nil {
		t.Fatalf("the key was not stored: %v", err)
	}
	if len(stored.Data[keyDataKey]) != KeySize {
		t.Errorf("stored key has %d bytes, want %d", len(stored.Data[keyDataKey]), KeySize)
	}

	// A restart, or a second replica, reads the same key.
	second, err := LoadOrCreateSigner(ctx, c, "echo-operator-system")
	if err != nil {
		t.Fatal(err)
	}
	r := record("web")
	first.Sign(r)
	if !second.Verify(r) {
		t.Error("a record signed before a restart does not verify after it")
	}

	// A key Secret of a version that did not sign the owner gets the
	// time the owner was first signed, and legacy records before it verify.
	delete(stored.Annotations, OwnerSignedSinceAnnotation)
	if err := c.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	upgraded, err := LoadOrCreateSigner(ctx, c, "echo-operator-system")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, stored.Annotations[OwnerSignedSinceAnnotation]); err != nil || upgraded.legacyBefore.IsZero() {
		t.Errorf("the upgrade left annotation %q, cut-off %v", stored.Annotations[OwnerSignedSinceAnnotation], upgraded.legacyBefore)
	}

	stored.Data[keyDataKey] = []byte("short")
	if err := c.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateSigner(ctx, c, "echo-operator-system"); err == nil {
		t.Error("a truncated key was accepted")
	}
}
