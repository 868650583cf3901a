package datamover

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// keyFile writes key as a mounted Secret's key would be, and returns its
// path.
func keyFile(t *testing.T, key []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, key, 0o400); err != nil {
		t.Fatal(err)
	}
	return path
}

// encryptionFlags are the mover's encryption flags of e, as a Job passes
// them: the SSE-C key as a file.
func encryptionFlags(e backupstore.S3Encryption) []string {
	flags := []string{"--" + moverprotocol.FlagS3SSE, e.Type}
	if e.KMSKeyID != "" {
		flags = append(flags, "--"+moverprotocol.FlagS3SSEKMSKeyID, e.KMSKeyID)
	}
	if e.CustomerKeyFile != "" {
		flags = append(flags, "--"+moverprotocol.FlagS3SSECustomerKeyFile, e.CustomerKeyFile)
	}
	return flags
}

// encryptionOf reads the encryption back from storage flags, for the
// test's own reads of what the mover stored.
func encryptionOf(storage []string) backupstore.S3Encryption {
	value := func(flag string) string {
		if i := slices.Index(storage, "--"+flag); i >= 0 && i+1 < len(storage) {
			return storage[i+1]
		}
		return ""
	}
	return backupstore.S3Encryption{Type: value(moverprotocol.FlagS3SSE), KMSKeyID: value(moverprotocol.FlagS3SSEKMSKeyID),
		CustomerKeyFile: value(moverprotocol.FlagS3SSECustomerKeyFile)}
}

// TestCLIEncryptedRoundTrip backs up and restores through the manager
// binary with each server-side encryption, against MinIO over TLS with its
// KMS, and compares every byte.
func TestCLIEncryptedRoundTrip(t *testing.T) {
	needManager(t)
	srv := s3server.StartTLS(t, testBucket)
	cases := []struct {
		name string
		e    backupstore.S3Encryption
	}{
		{"SSE-S3", backupstore.S3Encryption{Type: moverprotocol.SSES3}},
		{"SSE-KMS", backupstore.S3Encryption{Type: moverprotocol.SSEKMS, KMSKeyID: s3server.KMSKeyID}},
		{"SSE-C, a key of 32 bytes", backupstore.S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: keyFile(t, testCustomerKey)}},
		{"SSE-C, its base64", backupstore.S3Encryption{Type: moverprotocol.SSEC,
			CustomerKeyFile: keyFile(t, []byte(base64.StdEncoding.EncodeToString(otherCustomerKey)+"\n"))}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := "team-a/encrypted" + string(rune('a'+i)) + "/20260101-000000"
			storage := append(s3Flags(srv, testBucket), encryptionFlags(c.e)...)
			roundTrip(t, srv, storage, "s3://backups/echo-backups/"+key, key, "gzip")
		})
	}
}

// TestCLIEncryptionFaults: a backup written with SSE-C is neither
// restored nor inspected without its key, or with another; the restore
// fails with EncryptionError and leaves the target as it was.
func TestCLIEncryptionFaults(t *testing.T) {
	needManager(t)
	srv := s3server.StartTLS(t, testBucket)
	source, _ := echoData(t)
	right := encryptionFlags(backupstore.S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: keyFile(t, testCustomerKey)})
	backup := runMover(t, srv.Env(), append(append([]string{"backup", "--data-dir", source, "--key", "sse-c/b1"},
		s3Flags(srv, testBucket)...), right...)...)
	if backup.code != 0 {
		t.Fatalf("backup failed: %s\n%s", backup.term, backup.stderr)
	}

	cases := []struct {
		name       string
		encryption []string
		reason     string
	}{
		{"no key", nil, "EncryptionError"},
		{"another key", encryptionFlags(backupstore.S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: keyFile(t, otherCustomerKey)}), "EncryptionError"},
		{"SSE-S3 instead", encryptionFlags(backupstore.S3Encryption{Type: moverprotocol.SSES3}), "EncryptionError"},
		{"a key of 16 bytes", encryptionFlags(backupstore.S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: keyFile(t, testCustomerKey[:16])}), "InvalidArgument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			storage := append(s3Flags(srv, testBucket), c.encryption...)
			parent := t.TempDir()
			target := filepath.Join(parent, "target")
			writeTree(t, target, existingData)
			before := readTree(t, target)
			res := runMover(t, srv.Env(), append([]string{"restore", "--data-dir", target, "--key", "sse-c/b1", "--existing-data", "Replace"}, storage...)...)
			expectFailure(t, res, c.reason, false)
			assertUntouched(t, target, before)
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("the restore wrote next to the target: %v", entries)
			}
			inspect := runMover(t, srv.Env(), append([]string{"inspect", "--key", "sse-c/b1"}, storage...)...)
			expectFailure(t, inspect, c.reason, false)
			if strings.Contains(res.term+res.stderr+inspect.term+inspect.stderr, string(testCustomerKey)) {
				t.Error("the output reveals the key")
			}
		})
	}

	t.Run("the right key", func(t *testing.T) {
		restored := filepath.Join(t.TempDir(), "restored")
		res := runMover(t, srv.Env(), append(append([]string{"restore", "--data-dir", restored, "--key", "sse-c/b1"}, s3Flags(srv, testBucket)...), right...)...)
		if res.code != 0 {
			t.Fatalf("restore failed: %s\n%s", res.term, res.stderr)
		}
		if d := diffTrees(readTree(t, source), readTree(t, restored)); d != "" {
			t.Errorf("restored data differs:\n%s", d)
		}
	})
}
