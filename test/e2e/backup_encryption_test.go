package e2e

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/encrypt"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// encryptionNamespace is TestEncryptedBackups's namespace, whose Job pods
// are held (see heldJobPodNamespace): its data movers fail as well as
// succeed, and each ends its pod as it ended.
const encryptionNamespace = "e2e-encryption"

// TestEncryptedBackups backs up a journal the echo server wrote through a
// location that asks for SSE-C, with a key made as backup-restore.md
// tells, against the real S3 server over TLS: the stored objects cannot be
// read without the key, the live API lists the backup with it, a restore
// with it gives the journal back byte for byte, and a restore with another
// key fails with EncryptionError and creates nothing.
func TestEncryptedBackups(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	s3 := s3server.StartTLSAt(t, storageHost, "echo-backups")
	ns := encryptionNamespace
	Expect(createNamespace(ctx, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})).To(Succeed())
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(ns))).To(Succeed())
	Expect(k8sClient.Create(ctx, s3.CASecret(t, ns))).To(Succeed())

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyFile := filepath.Join(t.TempDir(), "backup.key")
	Expect(os.WriteFile(keyFile, key, 0o600)).To(Succeed())
	d := &docsKubectl{ns: ns, values: map[string]string{"KEYSECRET": "backup-key", "KEYFILE": keyFile, "ENDPOINTS": s3.Endpoint}}
	Expect(d.run(Default, documented("create", "secret", "generic", "KEYSECRET", "--from-file=key=KEYFILE"))).
		To(ContainSubstring("secret/backup-key created"))
	Expect(d.run(Default, documented("label", "secret", "KEYSECRET", "echo.dev/storage-credentials=true"))).
		To(ContainSubstring("secret/backup-key labeled"))
	Expect(d.run(Default, documented("annotate", "secret", "KEYSECRET", "echo.dev/storage-endpoints=ENDPOINTS"))).
		To(ContainSubstring("secret/backup-key annotated"))

	vault := s3.Storage("echo-backups", "vault")
	vault.S3.Encryption = &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
		CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "key"}}
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: *vault.S3}})).To(Succeed())
	data, journal := journaledEcho(t, types.NamespacedName{Namespace: ns, Name: "journal"}, "")
	mover := newCopyMover(t, data)

	backup := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: "journal",
			Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "vault"}}}}
	Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	job := waitJobNamed(t, ns, "journal-1-backup")
	Expect(job.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(ContainSubstring(string(key))), "the key is never an argument")
	mover.end(t, job)
	waitBackupComplete(t, client.ObjectKeyFromObject(backup))

	t.Run("the stored objects cannot be read without the key", func(t *testing.T) {
		RegisterTestingT(t)
		root := s3.Client(t)
		for _, object := range []string{"manifest.json", "data.tar.gz"} {
			name := "vault/" + ns + "/journal/journal-1/" + object
			_, err := root.StatObject(ctx, "echo-backups", name, minio.StatObjectOptions{})
			Expect(err).To(HaveOccurred(), "%s is readable without its key", object)
			sse, err := encrypt.NewSSEC(key)
			Expect(err).NotTo(HaveOccurred())
			info, err := root.StatObject(ctx, "echo-backups", name, minio.StatObjectOptions{ServerSideEncryption: sse})
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Metadata.Get("X-Amz-Server-Side-Encryption-Customer-Algorithm")).To(Equal("AES256"), object)
		}
	})

	t.Run("the live API lists it with the location's key", func(t *testing.T) {
		RegisterTestingT(t)
		listed := "vault." + ns + ".journal.journal-1"
		Eventually(func(g Gomega) {
			out := d.run(g, documented("get", "storedbackups"))
			g.Expect(out).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(listed) + `\s+` + regexp.QuoteMeta(ns) + `/journal\s+\S+\s+1\s+true\s+\S+$`))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a restore with the key gives the journal back", func(t *testing.T) {
		RegisterTestingT(t)
		mover.restoreCopy(t, ns, backup.Name, journal)
	})

	t.Run("a key is not sent to an endpoint its Secret does not list", func(t *testing.T) {
		RegisterTestingT(t)
		elsewhere := s3.Storage("echo-backups", "vault")
		elsewhere.S3.Endpoint = "https://s3.attacker.example.test"
		elsewhere.S3.Encryption = &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
			CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "key"}}
		restore := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "key-elsewhere"},
			Spec: echov1alpha1.EchoRestoreSpec{EchoName: "journal-elsewhere",
				Source: echov1alpha1.RestoreSource{Storage: &elsewhere, Key: ns + "/journal/journal-1"}}}
		Expect(k8sClient.Create(ctx, restore)).To(Succeed())
		Eventually(func(g Gomega) {
			rs := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(restore), rs)).To(Succeed())
			failed := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)
			g.Expect(failed).NotTo(BeNil())
			g.Expect(failed.Reason).To(Equal(echov1alpha1.ReasonEndpointNotAllowed), failed.Message)
			g.Expect(failed.Message).To(ContainSubstring(`the Secret "backup-key" does not allow its SSE-C key to be sent to https://s3.attacker.example.test`))
			g.Expect(failed.Message).To(ContainSubstring("or the operator's administrator adds it to STORAGE_ENDPOINTS"))
		}, timeout, interval).Should(Succeed())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "key-elsewhere-inspect"}, &batchv1.Job{})).NotTo(Succeed())
	})

	t.Run("a key goes, with no annotation, where the operator's administrator allows", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared-key",
			Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}}, Data: map[string][]byte{"key": make([]byte, 32)}})).To(Succeed())
		shared := s3.Storage("echo-backups", "vault")
		shared.S3.Endpoint = sharedStorageEndpoint
		shared.S3.Encryption = &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
			CustomerKey: &echov1alpha1.SecretKeyRef{Name: "shared-key", Key: "key"}}
		restore := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "key-shared"},
			Spec: echov1alpha1.EchoRestoreSpec{EchoName: "journal-shared",
				Source: echov1alpha1.RestoreSource{Storage: &shared, Key: ns + "/journal/journal-1"}}}
		Expect(k8sClient.Create(ctx, restore)).To(Succeed())
		// The Job is what the check let through; the storage is not there.
		endMoverPod(t, waitJobNamed(t, ns, "key-shared-inspect"), func(*corev1.Pod) podEnd {
			msg, err := moverprotocol.Encode(moverprotocol.Failure{Error: "the backup is not in the store", Reason: moverprotocol.ReasonNotFound})
			Expect(err).NotTo(HaveOccurred())
			return podEnd{exitCode: moverprotocol.ExitCode(false), message: string(msg)}
		})
	})

	t.Run("a restore with another key fails and creates nothing", func(t *testing.T) {
		RegisterTestingT(t)
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-key",
			Labels:      map[string]string{echov1alpha1.StorageSecretLabel: "true"},
			Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: s3.Endpoint}}, Data: map[string][]byte{"key": make([]byte, 32)}}
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		wrong := s3.Storage("echo-backups", "vault")
		wrong.S3.Encryption = &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
			CustomerKey: &echov1alpha1.SecretKeyRef{Name: other.Name, Key: "key"}}
		restore := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong-key"},
			Spec: echov1alpha1.EchoRestoreSpec{EchoName: "journal-wrong",
				Source: echov1alpha1.RestoreSource{Storage: &wrong, Key: ns + "/journal/journal-1"}}}
		Expect(k8sClient.Create(ctx, restore)).To(Succeed())
		mover.end(t, waitJobNamed(t, ns, "wrong-key-inspect"))
		Eventually(func(g Gomega) {
			rs := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(restore), rs)).To(Succeed())
			failed := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)
			g.Expect(failed).NotTo(BeNil())
			g.Expect(failed.Reason).To(Equal(echov1alpha1.RestoreReasonEncryptionError), failed.Message)
			g.Expect(rs.Status.Error).To(ContainSubstring("storage.s3.encryption"))
			g.Expect(rs.Status.Phase).To(Equal(echov1alpha1.PhaseFailed))
		}, timeout, interval).Should(Succeed())
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "journal-wrong"}, &echov1alpha1.Echo{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a failed restore created its Echo: %v", err)
	})
}
