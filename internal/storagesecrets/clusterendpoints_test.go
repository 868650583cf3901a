package storagesecrets

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestParseClusterEndpoints(t *testing.T) {
	c, err := ParseClusterEndpoints(" https://S3.Example.Test, http://minio.backup.svc:9000,,https://sts.example.test:8443/ ")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.String(), "https://s3.example.test:443,http://minio.backup.svc:9000,https://sts.example.test:8443"; got != want {
		t.Errorf("origins = %s, want %s", got, want)
	}
	if c, err := ParseClusterEndpoints(""); err != nil || c.String() != "" {
		t.Errorf("empty: %q, %v; want none", c.String(), err)
	}
	for entry, says := range map[string]string{
		"s3.example.test":                     "not an http or https URL",
		"s3://bucket":                         "not an http or https URL",
		"https://":                            "no host",
		"https://*.example.test":              "nothing is a wildcard",
		"https://s3.example.test/backups":     "write https://s3.example.test:443",
		"https://s3.example.test?region=eu":   "write https://s3.example.test:443",
		"https://user:pw@s3.example.test":     "write https://s3.example.test:443",
		"https://s3.example.test:99999":       "port 99999 is out of range",
		"https://s3.example.test:0":           "port 0 is out of range",
		"https://s3.example.test, ftp://host": `"ftp://host" is not a storage endpoint`,
	} {
		_, err := ParseClusterEndpoints(entry)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseClusterEndpoints(%q) = %v, want an error saying %q", entry, err, says)
		}
	}
}

// The flag's endpoints add to the environment's, and a bad one stops the
// flag set, as the manager parses them.
func TestClusterEndpointsFlag(t *testing.T) {
	c, err := ParseClusterEndpoints("https://s3.example.test")
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&c, ClusterEndpointsFlag, "")
	if err := fs.Parse([]string{"--" + ClusterEndpointsFlag + "=https://sts.example.test", "--" + ClusterEndpointsFlag, "http://minio:9000"}); err != nil {
		t.Fatal(err)
	}
	if got, want := c.String(), "https://s3.example.test:443,https://sts.example.test:443,http://minio:9000"; got != want {
		t.Errorf("origins = %s, want %s", got, want)
	}
	if err := fs.Parse([]string{"--" + ClusterEndpointsFlag + "=https://*.example.test"}); err == nil {
		t.Error("a wildcard was accepted")
	}
}

func TestClusterEndpointsAllow(t *testing.T) {
	c, err := ParseClusterEndpoints("https://s3.shared.test,http://minio.backup.svc:9000")
	if err != nil {
		t.Fatal(err)
	}
	annotated := map[string]string{echov1alpha1.StorageEndpointsAnnotation: "https://s3.team.test"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		endpoint    string
		want        bool
	}{
		{"the administrator's, with no annotation", nil, "https://s3.shared.test", true},
		{"the administrator's, the default port written out", nil, "https://S3.shared.test:443/bucket", true},
		{"the administrator's, beside the annotation's", annotated, "http://minio.backup.svc:9000", true},
		{"the annotation's, beside the administrator's", annotated, "https://s3.team.test", true},
		{"another scheme than the administrator's", nil, "http://s3.shared.test", false},
		{"another port than the administrator's", nil, "http://minio.backup.svc:9001", false},
		{"a subdomain of the administrator's", nil, "https://evil.s3.shared.test", false},
		{"listed by neither", annotated, "https://s3.attacker.test", false},
		{"no URL", nil, "s3.shared.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Allows(tc.annotations, tc.endpoint); got != tc.want {
				t.Errorf("Allows(%v, %q) = %v, want %v", tc.annotations, tc.endpoint, got, tc.want)
			}
		})
	}
}

// A refusal says both ways to allow the endpoint: the object's
// annotation, with its value, and the administrator's setting.
func TestUsableWithClusterEndpoints(t *testing.T) {
	c, err := ParseClusterEndpoints("https://s3.shared.test")
	if err != nil {
		t.Fatal(err)
	}
	labelled := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	if err := Usable(secret("key", labelled, nil), "https://s3.shared.test", c); err != nil {
		t.Errorf("a key with no annotation, for the administrator's endpoint: %v", err)
	}
	err = Usable(secret("key", labelled, map[string]string{echov1alpha1.StorageEndpointsAnnotation: "https://s3.team.test"}), "https://attacker.test", c)
	var refused *EndpointNotAllowedError
	if !errors.As(err, &refused) {
		t.Fatalf("a key for an endpoint nobody lists: %v, want an EndpointNotAllowedError", err)
	}
	for _, says := range []string{
		`the Secret "key" does not allow its SSE-C key to be sent to https://attacker.test, nor does the operator's administrator`,
		"kubectl annotate secret -n team key --overwrite echo.dev/storage-endpoints=https://s3.team.test:443,https://attacker.test",
		"or the operator's administrator adds it to STORAGE_ENDPOINTS (--storage-endpoints) on the operator's Deployment",
	} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("the refusal %q does not say %q", err, says)
		}
	}
}
