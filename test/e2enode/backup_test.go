package e2enode

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// TestBackupAndRestoreInContainers backs up the persistent sample Echo as
// docs/backup-restore.md shows: the mover Jobs run as containers that
// mount the Echo's claim, one writing to MinIO, running as a pod behind
// the Service the samples name, the other to a claim; one whose data mover
// asks for a node label no node has waits, saying so with the real
// scheduler's account. A restore into a new Echo brings back the journal
// the echo server wrote before the backup, byte for byte, read through its
// HTTP API; so does one from a backup
// that MinIO's KMS encrypted as the Job wrote it (SSE-KMS), and from a
// copy in a second MinIO (checkCopies). The docs' walk-through then runs
// with both stores (checkWalkthrough): a schedule's backup, its copy and a
// restore test into a scratch Echo with real Jobs and pods, which proves
// the data reads back as backed up; then the second store breaks, and once
// it is back the failed copy is made again. Deleting the Echo with a final
// backup configured takes that backup before anything goes.
func TestBackupAndRestoreInContainers(t *testing.T) {
	s3 := runMinIO(t)
	ns := restrictedNamespace(t, "journal")
	samples := filepath.Join(repoRoot, "config", "samples")
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(samples, "echo_v1alpha1_echo_persistent.yaml"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/echo-sample-persistent", "--timeout=180s")
	instance, journal := writeJournal(t, ns, "echo-sample-persistent", "/first", "/second", "/third")
	journalPath := "/journal?instance=" + instance
	t.Run("the journal survives its pod", func(t *testing.T) {
		kubectl(t, "delete", "pod", "-n", ns, instance)
		kubectl(t, "wait", "-n", ns, "--for=delete", "pod/"+instance, "--timeout=120s")
		checkEchoPods(t, ns, "echo-sample-persistent", 1)
		if got := getThroughPortForward(t, ns, "svc/echo-sample-persistent", journalPath); got != journal {
			t.Fatalf("after its pod's deletion the journal is\n%s\nwant\n%s", got, journal)
		}
	})

	kubectl(t, "create", "secret", "generic", "s3-credentials", "-n", ns,
		"--from-literal=AWS_ACCESS_KEY_ID="+minioUser, "--from-literal=AWS_SECRET_ACCESS_KEY="+minioPassword)
	kubectl(t, "label", "secret", "s3-credentials", "-n", ns, "echo.dev/storage-credentials=true")
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(samples, "echo_v1alpha1_echobackup.yaml"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echobackup/echo-sample-persistent-backup", "--timeout=300s")
	if n := countObjects(t, s3); n == 0 {
		t.Fatal("the backup completed but the bucket is empty")
	}

	t.Run("to a claim", func(t *testing.T) {
		// The claim opts in as backup storage as backup-restore.md tells,
		// before a backup names it.
		kubectlApply(t, ns, backupClaimYAML)
		kubectl(t, "label", "-n", ns, "pvc", "backups", "echo.dev/backup-storage=true")
		kubectlApply(t, ns, pvcBackupYAML)
		kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echobackup/to-claim", "--timeout=300s")
	})
	t.Run("a data mover pod no node takes", func(t *testing.T) {
		kubectlApply(t, ns, unplaceableBackupYAML)
		kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.reason}=MoverUnschedulable", "echobackup/unplaceable", "--timeout=120s")
		if phase := backupField(t, ns, "unplaceable", "{.status.phase}"); phase != "Pending" {
			t.Errorf("the backup whose pod no node takes is %s, want Pending", phase)
		}
		// The real scheduler's own account, and what to check.
		msg := backupField(t, ns, "unplaceable", `{.status.conditions[?(@.type=="Complete")].message}`)
		for _, want := range []string{"didn't match Pod's node affinity/selector", "spec.mover"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the backup's Complete condition does not say %q: %s", want, msg)
			}
		}
		events := kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=unplaceable,reason=MoverUnschedulable", "-o", "name")
		if strings.TrimSpace(events) == "" {
			t.Errorf("no MoverUnschedulable Event on the backup")
		}
		kubectl(t, "delete", "-n", ns, "echobackup/unplaceable", "--timeout=120s")
	})
	t.Run("restore into a new Echo", func(t *testing.T) {
		kubectlApply(t, ns, restoreYAML)
		kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echorestore/into-restored", "--timeout=300s")
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/restored", "--timeout=180s")
		checkEchoPods(t, ns, "restored", 1)
		got := getThroughPortForward(t, ns, "svc/restored", journalPath)
		if got != journal {
			t.Fatalf("the restored journal differs from the one backed up:\nbacked up:\n%s\nrestored:\n%s", journal, got)
		}
	})
	t.Run("encrypted at rest by the store's KMS", func(t *testing.T) {
		kubectlApply(t, ns, encryptedBackupYAML)
		kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echobackup/encrypted", "--timeout=300s")
		location := strings.TrimSpace(kubectl(t, "get", "-n", ns, "echobackup/encrypted", "-o", "jsonpath={.status.location}"))
		expectEncryptedWithKMS(t, s3, strings.TrimPrefix(location, "s3://"+backupBucket+"/"))
		kubectlApply(t, ns, encryptedRestoreYAML)
		kubectl(t, "wait", "-n", ns, "--for=condition=Complete", "echorestore/from-encrypted", "--timeout=300s")
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/restored-encrypted", "--timeout=180s")
		if got := getThroughPortForward(t, ns, "svc/restored-encrypted", journalPath); got != journal {
			t.Fatalf("the journal restored from the encrypted backup differs:\nbacked up:\n%s\nrestored:\n%s", journal, got)
		}
	})
	t.Run("copied to a second store", func(t *testing.T) {
		checkCopies(t, ns, s3, journal, journalPath)
	})
	t.Run("final backup before delete", func(t *testing.T) {
		before := countObjects(t, s3)
		kubectl(t, "patch", "-n", ns, "echo/echo-sample-persistent", "--type=merge", "-p", finalBackupPatch)
		kubectl(t, "delete", "-n", ns, "echo/echo-sample-persistent", "--timeout=300s")
		backups, err := clientset.RESTClient().Get().AbsPath("/apis/echo.dev/v1alpha1/namespaces", ns, "echobackups").DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(backups), "echo-sample-persistent-final-") {
			t.Errorf("no final backup among %s", backups)
		}
		if after := countObjects(t, s3); after <= before {
			t.Errorf("the bucket held %d objects before the delete and %d after: no final backup was written", before, after)
		}
	})
}

// writeJournal sends requests to the Echo through its Service and returns
// the instance that served them (its pod, which names its journal) and
// that journal as the echo server serves it.
func writeJournal(t *testing.T, ns, echo string, paths ...string) (instance, journal string) {
	t.Helper()
	base, stop := portForward(t, ns, "svc/"+echo, echoPort)
	defer stop()
	for _, p := range paths {
		var answer struct {
			Instance string `json:"instance"`
		}
		if err := json.Unmarshal([]byte(mustGet(t, base+p)), &answer); err != nil || answer.Instance == "" {
			t.Fatalf("the echo server's answer names no instance: %v", err)
		}
		instance = answer.Instance
	}
	journal = mustGet(t, base+"/journal")
	for _, p := range paths {
		if !strings.Contains(journal, `"path":"`+p+`"`) {
			t.Fatalf("the journal lacks %s:\n%s", p, journal)
		}
	}
	return instance, journal
}

// expectEncryptedWithKMS checks that the objects under prefix, a backup's
// archive and manifest, are stored encrypted by MinIO's KMS with its key.
func expectEncryptedWithKMS(t *testing.T, s3 *minio.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	n := 0
	for obj := range s3.ListObjects(ctx, backupBucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("listing %s: %v", prefix, obj.Err)
		}
		stat, err := s3.StatObject(ctx, backupBucket, obj.Key, minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("%s: %v", obj.Key, err)
		}
		sse, key := stat.Metadata.Get("X-Amz-Server-Side-Encryption"), stat.Metadata.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id")
		if sse != "aws:kms" || !strings.HasSuffix(key, minioKMSKey) {
			t.Errorf("%s is stored with encryption %q, key %q; want aws:kms with %s", obj.Key, sse, key, minioKMSKey)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("%d objects under %s, want the backup's archive and manifest", n, prefix)
	}
}

// countObjects counts the objects in the backup bucket.
func countObjects(t *testing.T, s3 *minio.Client) int {
	t.Helper()
	n := 0
	for obj := range s3.ListObjects(context.Background(), backupBucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("listing the bucket: %v", obj.Err)
		}
		n++
	}
	return n
}

const backupClaimYAML = `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: backups
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`

const pvcBackupYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoBackup
metadata:
  name: to-claim
spec:
  echoName: echo-sample-persistent
  storage:
    persistentVolumeClaim:
      claimName: backups
      subPath: echo
`

// unplaceableBackupYAML is a backup whose data mover asks for a node label
// no node has.
const unplaceableBackupYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoBackup
metadata:
  name: unplaceable
spec:
  echoName: echo-sample-persistent
  storage:
    persistentVolumeClaim:
      claimName: backups
      subPath: unplaceable
  mover:
    nodeSelector:
      node-role.example.com/storage: ""
`

const restoreYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoRestore
metadata:
  name: into-restored
spec:
  source:
    backupName: echo-sample-persistent-backup
  echoName: restored
`

// encryptedBackupYAML is the S3 sample's backup with the store's KMS
// encrypting it (docs/backup-restore.md, Encryption at rest).
const encryptedBackupYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoBackup
metadata:
  name: encrypted
spec:
  echoName: echo-sample-persistent
  storage:
    s3:
      endpoint: http://minio.minio.svc:9000
      bucket: echo-backups
      prefix: encrypted
      forcePathStyle: true
      credentialsSecretRef:
        name: s3-credentials
      encryption:
        type: SSE-KMS
        kmsKeyID: ` + minioKMSKey + `
`

const encryptedRestoreYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoRestore
metadata:
  name: from-encrypted
spec:
  source:
    backupName: encrypted
  echoName: restored-encrypted
`

const finalBackupPatch = `{"spec":{"backup":{"beforeDelete":{"enabled":true,"storage":{"s3":{
  "endpoint":"http://minio.minio.svc:9000","bucket":"echo-backups","forcePathStyle":true,
  "credentialsSecretRef":{"name":"s3-credentials"}}}}}}}`
