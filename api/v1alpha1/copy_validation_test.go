package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// locationRef is the storage of an EchoBackupLocation, unstructured.
func locationRef(name string) map[string]any {
	return map[string]any{"locationRef": map[string]any{"name": name}}
}

// withIdentity replaces the storage's credentials by an identity.
func withIdentity(serviceAccount string) func(map[string]any) {
	return func(s map[string]any) {
		delete(s, "credentialsSecretRef")
		s["identity"] = map[string]any{"serviceAccountName": serviceAccount}
	}
}

// A backup's copies (spec.copyTo) are checked at admission, in a backup
// and in a schedule's template alike.
func TestBackupCopiesValidateAtAdmission(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	copyTo := func(pairs ...any) []any {
		var out []any
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, map[string]any{"name": pairs[i], "storage": pairs[i+1]})
		}
		return out
	}
	cases := []struct {
		name    string
		storage map[string]any
		copies  []any
		want    string // empty: accepted
	}{
		{"a copy to a location", locationRef("primary"), copyTo("offsite", locationRef("offsite")), ""},
		{"a copy to a bucket", s3Storage(), copyTo("offsite", s3Storage(func(s map[string]any) { s["bucket"] = "offsite" })), ""},
		{"a copy to a claim", locationRef("primary"), copyTo("local", map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "backups"}}), ""},
		{"three copies", locationRef("primary"), copyTo("a", locationRef("a"), "b", locationRef("b"), "c", locationRef("c")), ""},
		{"four copies", locationRef("primary"), copyTo("a", locationRef("a"), "b", locationRef("b"), "c", locationRef("c"), "d", locationRef("d")),
			"copyTo: Too many"},
		{"two copies of one name", locationRef("primary"), copyTo("offsite", locationRef("a"), "offsite", locationRef("b")), "copyTo[].name must be unique"},
		{"a copy name that is no DNS label", locationRef("primary"), copyTo("Off_Site", locationRef("a")), "copyTo[].name must be a DNS label"},
		{"a copy to the backup's own location", locationRef("primary"), copyTo("again", locationRef("primary")),
			"a copy's storage.locationRef must name another EchoBackupLocation than the backup's storage"},
		{"two copies to one location", locationRef("primary"), copyTo("a", locationRef("offsite"), "b", locationRef("offsite")),
			"two copies must not name the same EchoBackupLocation"},
		{"a copy without storage", locationRef("primary"), copyTo("a", map[string]any{}),
			"set exactly one of storage.s3, storage.persistentVolumeClaim and storage.locationRef"},
		{"two identities", s3Storage(withIdentity("backup-writer")), copyTo("a", s3Storage(withIdentity("offsite-writer"))),
			"a copy's Job runs as one ServiceAccount"},
		{"one identity on both sides", s3Storage(withIdentity("backup-writer")), copyTo("a", s3Storage(withIdentity("backup-writer"))), ""},
		{"an identity on one side", s3Storage(withIdentity("backup-writer")), copyTo("a", s3Storage()), ""},
	}
	for _, tc := range cases {
		backup := map[string]any{"echoName": "web", "storage": tc.storage, "copyTo": tc.copies}
		objs := map[string]map[string]any{
			"EchoBackup":         backup,
			"EchoBackupSchedule": {"schedule": "@daily", "template": backup},
		}
		for kind, spec := range objs {
			err := k8sClient.Create(ctx, object(kind, ns, "copies", spec), client.DryRunAll)
			if tc.want == "" {
				Expect(err).NotTo(HaveOccurred(), "%s: %s", kind, tc.name)
				continue
			}
			Expect(err).To(MatchError(ContainSubstring(tc.want)), "%s: %s", kind, tc.name)
		}
	}

	t.Run("a restore from a copy", func(t *testing.T) {
		RegisterTestingT(t)
		ok := map[string]any{"source": map[string]any{"backupName": "web-1", "copy": "offsite"}}
		Expect(k8sClient.Create(ctx, object("EchoRestore", ns, "from-copy", ok), client.DryRunAll)).To(Succeed())
		alone := map[string]any{"source": map[string]any{"storedBackup": "offsite.team.web.web-1", "copy": "offsite"}}
		Expect(k8sClient.Create(ctx, object("EchoRestore", ns, "from-copy", alone), client.DryRunAll)).
			To(MatchError(ContainSubstring("source.copy names a copy of the EchoBackup of source.backupName")))
		bad := map[string]any{"source": map[string]any{"backupName": "web-1", "copy": "Off_Site"}}
		Expect(k8sClient.Create(ctx, object("EchoRestore", ns, "from-copy", bad), client.DryRunAll)).
			To(MatchError(ContainSubstring("source.copy is the name of an entry")))
	})
}
