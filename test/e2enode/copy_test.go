package e2enode

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"k8s.io/apimachinery/pkg/util/wait"
)

// offsiteMinIO is the second store copies go to: another MinIO, with its
// own bucket and credentials.
var offsiteMinIO = minioServer{namespace: "minio-offsite", user: "offsite-writer", password: "e2enode-offsite-key", bucket: "echo-offsite"}

// checkCopies backs up the persistent Echo of ns, whose journal is
// journal, to the samples' EchoBackupLocation with a copy to a second
// MinIO's (docs/backup-restore.md, Copies): the copy's Job writes the
// artifact to the second store with the backup's checksum; once the
// primary store has lost the artifact, a restore from the copy brings the
// journal back. Then the walk-through of the docs runs with the same two
// stores (checkWalkthrough).
// The Secret s3-credentials of the samples' MinIO must exist in ns.
func checkCopies(t *testing.T, ns string, primary *minio.Client, journal, journalPath string) {
	offsite := runMinIOServer(t, offsiteMinIO)
	kubectl(t, "create", "secret", "generic", "offsite-credentials", "-n", ns,
		"--from-literal=AWS_ACCESS_KEY_ID="+offsiteMinIO.user, "--from-literal=AWS_SECRET_ACCESS_KEY="+offsiteMinIO.password)
	kubectl(t, "label", "secret", "offsite-credentials", "-n", ns, "echo.dev/storage-credentials=true")
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(repoRoot, "config", "samples", "echo_v1alpha1_echobackuplocation.yaml"))
	kubectlApply(t, ns, offsiteLocationYAML)

	kubectlApply(t, ns, copiedBackupYAML("copied"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echobackup/copied", "--timeout=300s")
	kubectl(t, "wait", "-n", ns, "--for=condition=Copied", "echobackup/copied", "--timeout=300s")
	checksum := backupField(t, ns, "copied", "{.status.checksum}")
	copied := backupField(t, ns, "copied", "{.status.copies[0].name} {.status.copies[0].phase} {.status.copies[0].checksum}")
	if want := "offsite Completed " + checksum; checksum == "" || copied != want {
		t.Fatalf("the copy's status is %q, want %q", copied, want)
	}
	key := strings.TrimPrefix(backupField(t, ns, "copied", "{.status.location}"), "s3://"+backupBucket+"/")
	if got := backupField(t, ns, "copied", "{.status.copies[0].key}"); got != "s3://"+offsiteMinIO.bucket+"/"+key {
		t.Errorf("the copy's key is %q, want the backup's key %s in the offsite bucket", got, key)
	}
	expectArtifact(t, offsite, offsiteMinIO.bucket, key)

	t.Run("restore from the copy once the primary lost the backup", func(t *testing.T) {
		removeArtifact(t, primary, backupBucket, key)
		kubectlApply(t, ns, copyRestoreYAML)
		kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echorestore/from-offsite", "--timeout=300s")
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/restored-from-copy", "--timeout=180s")
		from := strings.TrimSpace(kubectl(t, "get", "echorestore", "from-offsite", "-n", ns, "-o", "jsonpath={.status.restoredFrom}"))
		if want := "s3://" + offsiteMinIO.bucket + "/" + key; from != want {
			t.Errorf("the restore says it restored from %q, want %s", from, want)
		}
		if got := getThroughPortForward(t, ns, "svc/restored-from-copy", journalPath); got != journal {
			t.Fatalf("the journal restored from the copy differs:\nbacked up:\n%s\nrestored:\n%s", journal, got)
		}
	})

	t.Run("the docs' walk-through: nightly, copied, tested", func(t *testing.T) { checkWalkthrough(t, ns, journalPath, journal) })
}

// backupField is the EchoBackup's field at the JSONPath path, as
// `kubectl get echobackup NAME -o jsonpath=...` prints it.
func backupField(t *testing.T, ns, name, path string) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, "get", "echobackup", name, "-n", ns, "-o", "jsonpath="+path))
}

// awaitCopyPhase waits until the first copy of the EchoBackup is in phase.
func awaitCopyPhase(t *testing.T, ns, name, phase string, timeout time.Duration) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, timeout, true, func(context.Context) (bool, error) {
		out, err := kubectlErr("get", "echobackup", name, "-n", ns, "-o", "jsonpath={.status.copies[0].phase}")
		got = strings.TrimSpace(out)
		return err == nil && got == phase, nil
	})
	if err != nil {
		t.Fatalf("the copy of EchoBackup %s is %q after %v, want %s: %v", name, got, timeout, phase, err)
	}
}

// expectArtifact checks that the bucket holds a backup under key: its
// manifest and its archive.
func expectArtifact(t *testing.T, s3 *minio.Client, bucket, key string) {
	t.Helper()
	var names []string
	for obj := range s3.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("listing %s in %s: %v", key, bucket, obj.Err)
		}
		names = append(names, strings.TrimPrefix(obj.Key, key+"/"))
	}
	var archive bool
	for _, n := range names {
		archive = archive || strings.HasPrefix(n, "data.tar")
	}
	if !archive || !strings.Contains(strings.Join(names, " "), "manifest.json") {
		t.Fatalf("%s in bucket %s holds %v, want a manifest and an archive", key, bucket, names)
	}
}

// removeArtifact deletes the objects under key from the bucket, as a
// store that lost the backup would.
func removeArtifact(t *testing.T, s3 *minio.Client, bucket, key string) {
	t.Helper()
	ctx := context.Background()
	for obj := range s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("listing %s in %s: %v", key, bucket, obj.Err)
		}
		if err := s3.RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			t.Fatalf("removing %s: %v", obj.Key, err)
		}
	}
}

// offsiteLocationYAML is the second store, as docs/backup-restore.md's
// location offsite, here the second MinIO.
var offsiteLocationYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoBackupLocation
metadata:
  name: offsite
spec:
  s3:
    endpoint: http://minio.` + offsiteMinIO.namespace + `.svc:9000
    bucket: ` + offsiteMinIO.bucket + `
    forcePathStyle: true
    credentialsSecretRef:
      name: offsite-credentials
`

// copiedBackupYAML is a backup of the persistent sample Echo to the
// samples' location with a copy to offsite (docs/backup-restore.md, Copies).
func copiedBackupYAML(name string) string {
	return `apiVersion: echo.dev/v1alpha1
kind: EchoBackup
metadata:
  name: ` + name + `
spec:
  echoName: echo-sample-persistent
  storage:
    locationRef:
      name: echo-backups
  copyTo:
    - name: offsite
      storage:
        locationRef:
          name: offsite
`
}

const copyRestoreYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoRestore
metadata:
  name: from-offsite
spec:
  source:
    backupName: copied
    copy: offsite
  echoName: restored-from-copy
`
