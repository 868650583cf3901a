package storagesecrets

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestNotOptedIn(t *testing.T) {
	secret := func(name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: labels}}
	}
	api := fake.NewClientBuilder().WithObjects(
		secret("s3", map[string]string{echov1alpha1.StorageSecretLabel: "true"}),
		secret("db-credentials", nil),
		secret("half", map[string]string{echov1alpha1.StorageSecretLabel: "yes"}),
	).Build()
	got, err := NotOptedIn(context.Background(), api, "team", []string{"s3", "db-credentials", "missing", "half"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db-credentials", "half"}; !slices.Equal(got, want) {
		t.Errorf("NotOptedIn = %v, want %v: labelled and missing Secrets pass, others do not", got, want)
	}
}
