package storagesecrets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func secret(name string, labels, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: labels, Annotations: annotations}}
}

func TestReadMissingNotOptedIn(t *testing.T) {
	api := fake.NewClientBuilder().WithObjects(
		secret("s3", map[string]string{echov1alpha1.StorageSecretLabel: "true"}, nil),
		secret("db-credentials", nil, nil),
		secret("half", map[string]string{echov1alpha1.StorageSecretLabel: "yes"}, nil),
	).Build()
	names := []string{"s3", "db-credentials", "missing", "half"}
	found, err := Read(context.Background(), api, "team", names)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := found.NotOptedIn(names), []string{"db-credentials", "half"}; !slices.Equal(got, want) {
		t.Errorf("NotOptedIn = %v, want %v: labelled and missing Secrets are not refused, others are", got, want)
	}
	if got, want := found.Missing(names), []string{"missing"}; !slices.Equal(got, want) {
		t.Errorf("Missing = %v, want %v", got, want)
	}
}

func TestAnnotationAllows(t *testing.T) {
	allow := func(list string) map[string]string {
		return map[string]string{echov1alpha1.StorageEndpointsAnnotation: list}
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		endpoint    string
		want        bool
	}{
		{"listed", allow("https://s3.eu-west-1.amazonaws.com"), "https://s3.eu-west-1.amazonaws.com", true},
		{"among others, with spaces", allow("https://sts.amazonaws.com, https://s3.eu-west-1.amazonaws.com"), "https://s3.eu-west-1.amazonaws.com", true},
		{"the default port is the scheme's", allow("https://s3.example.test"), "https://s3.example.test:443", true},
		{"host case aside", allow("https://S3.Example.Test"), "https://s3.example.test", true},
		{"a path plays no part", allow("https://s3.example.test/"), "https://s3.example.test", true},
		{"no annotation allows nothing", nil, "https://s3.example.test", false},
		{"another scheme", allow("https://s3.example.test"), "http://s3.example.test", false},
		{"another port", allow("https://s3.example.test"), "https://s3.example.test:8443", false},
		{"a subdomain is another host", allow("https://example.test"), "https://s3.example.test", false},
		{"a suffix is another host", allow("https://s3.example.test"), "https://s3.example.test.attacker.test", false},
		{"no wildcard", allow("https://*.example.test"), "https://s3.example.test", false},
		{"an entry that is no URL", allow("s3.example.test"), "https://s3.example.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (ClusterEndpoints{}).Allows(tc.annotations, tc.endpoint); got != tc.want {
				t.Errorf("Allows(%v, %q) = %v, want %v", tc.annotations, tc.endpoint, got, tc.want)
			}
		})
	}
}

func TestUsable(t *testing.T) {
	labelled := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	allowed := map[string]string{echov1alpha1.StorageEndpointsAnnotation: "https://s3.example.test"}
	if err := Usable(secret("key", labelled, allowed), "https://s3.example.test", ClusterEndpoints{}); err != nil {
		t.Errorf("a labelled key for its listed endpoint: %v", err)
	}
	if err := Usable(secret("creds", labelled, nil), "", ClusterEndpoints{}); err != nil {
		t.Errorf("labelled credentials: %v", err)
	}
	var notOptedIn *NotOptedInError
	if err := Usable(secret("db", nil, allowed), "https://s3.example.test", ClusterEndpoints{}); !errors.As(err, &notOptedIn) {
		t.Errorf("an unlabelled Secret: %v, want a NotOptedInError", err)
	}
	var notAllowed *EndpointNotAllowedError
	err := Usable(secret("key", labelled, allowed), "https://attacker.test", ClusterEndpoints{})
	if !errors.As(err, &notAllowed) {
		t.Fatalf("a key for an endpoint not listed: %v, want an EndpointNotAllowedError", err)
	}
	if want := "echo.dev/storage-endpoints=https://s3.example.test:443,https://attacker.test"; !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal %q does not say how to allow it (%s)", err, want)
	}
}
