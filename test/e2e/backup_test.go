//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/echoserver"
	"github.com/echo-operator/echo-operator/test/harness/moverrunner"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// KWOK completes the pods of the data mover Jobs without running them.
// These tests run the data mover for real where the Job would
// (test/harness/moverrunner): the manager binary, with the Job's own
// arguments and the Echo's data in a local directory, against a real S3
// server; its result then becomes the pod's termination message, as the
// kubelet would report it.

// runMoverForJob runs the manager binary as a Job's container would, with
// the Echo's claim at dataDir, and reports its result as the Job pod's
// termination message.
func runMoverForJob(t *testing.T, job *batchv1.Job, dataDir string, s3 *s3server.Server) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	runner := &moverrunner.Runner{Binary: op.binary, Client: k8sClient, ClaimDir: moverrunner.OneDir(dataDir), WorkDir: t.TempDir()}
	res, err := runner.RunJob(ctx, job)
	Expect(err).NotTo(HaveOccurred(), "the data mover did not run or its result was not reported: %s", res.Output)
	Expect(res.Succeeded()).To(BeTrue(), "the data mover failed: %s", res.Output)
	Expect(string(res.Output)).NotTo(ContainSubstring(s3.SecretKey), "credentials never reach the logs")
	return res.Message
}

func waitJobNamed(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, job)
	}, timeout, interval).Should(Succeed(), func() string { return "Job " + name + " never appeared; " + moverOwners(ns) })
	return job
}

// moverOwners tells what the backups and restores of a namespace say of
// themselves: why a Job they should have made is not there.
func moverOwners(ns string) string {
	ctx := context.Background()
	backups, restores := &echov1alpha1.EchoBackupList{}, &echov1alpha1.EchoRestoreList{}
	if err := k8sClient.List(ctx, backups, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	if err := k8sClient.List(ctx, restores, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	out := "in namespace " + ns + ":"
	for _, b := range backups.Items {
		out += fmt.Sprintf("\n  EchoBackup %s: finalizers %v, conditions %+v", b.Name, b.Finalizers, b.Status.Conditions)
	}
	for _, r := range restores.Items {
		out += fmt.Sprintf("\n  EchoRestore %s: finalizers %v, conditions %+v", r.Name, r.Finalizers, r.Status.Conditions)
	}
	return out
}

// journaledEcho creates the Echo key with one replica and persistence
// and message, waits for it, and has a real echo server journal ten
// requests into a data directory, which it returns with the journal file,
// for data mover runs to read as the Echo's volume.
func journaledEcho(t *testing.T, key types.NamespacedName, message string) (dataDir string, journal []byte) {
	t.Helper()
	Expect(k8sClient.Create(context.Background(), &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Message: message,
			Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}},
	})).To(Succeed())
	waitReady(t, key, 1)
	dataDir = t.TempDir()
	writeJournal(t, dataDir, 10)
	journal, err := os.ReadFile(filepath.Join(dataDir, "journal", "journal-0.jsonl"))
	Expect(err).NotTo(HaveOccurred())
	return dataDir, journal
}

// newLocation creates the namespace's credentials Secret for s3 and the
// EchoBackupLocation name on its bucket echo-backups under prefix.
func newLocation(t *testing.T, s3 *s3server.Server, ns, name, prefix string) {
	t.Helper()
	ctx := context.Background()
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(ns))).To(Succeed())
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *s3.Storage("echo-backups", prefix).S3},
	})).To(Succeed())
}

// expectRestored runs the inspect and restore Jobs of the EchoRestore
// restore of namespace ns with the real data mover against s3, checks that
// the restored journal equals journal byte for byte, and waits for the
// Echo echo to serve again.
func expectRestored(t *testing.T, s3 *s3server.Server, ns, restore, echo string, journal []byte) {
	t.Helper()
	runMoverForJob(t, waitJobNamed(t, ns, restore+"-inspect"), "", s3)
	restored := t.TempDir()
	runMoverForJob(t, waitJobNamed(t, ns, restore+"-restore"), restored, s3)
	got, err := os.ReadFile(filepath.Join(restored, "journal", "journal-0.jsonl"))
	Expect(err).NotTo(HaveOccurred())
	Expect(bytes.Equal(got, journal)).To(BeTrue(), "the restored journal differs")
	waitReady(t, types.NamespacedName{Namespace: ns, Name: echo}, 1)
}

// copyMover runs the data mover for held Job pods: the Echo's claims at
// data, but the claim of the Echo journal-copy at restored.
type copyMover struct {
	*heldMover
	restored string
}

func newCopyMover(t *testing.T, data string) copyMover {
	t.Helper()
	restored := t.TempDir()
	return copyMover{restored: restored, heldMover: &heldMover{runner: &moverrunner.Runner{Binary: op.binary, Client: k8sClient, WorkDir: t.TempDir(),
		ClaimDir: func(_, claim string) string {
			if claim == "journal-copy-data" {
				return restored
			}
			return data
		}}}}
}

// restoreCopy restores the EchoBackup backup of namespace ns into a new
// Echo journal-copy, ending the held pods of its inspect and restore Jobs
// with the real data mover, and checks that the restored journal equals
// journal byte for byte and that the Echo serves.
func (m copyMover) restoreCopy(t *testing.T, ns, backup string, journal []byte) {
	t.Helper()
	Expect(k8sClient.Create(context.Background(), &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: backup}, EchoName: "journal-copy"}})).To(Succeed())
	m.end(t, waitJobNamed(t, ns, "copy-inspect"))
	m.end(t, waitJobNamed(t, ns, "copy-restore"))
	got, err := os.ReadFile(filepath.Join(m.restored, "journal", "journal-0.jsonl"))
	Expect(err).NotTo(HaveOccurred())
	Expect(bytes.Equal(got, journal)).To(BeTrue(), "the restored journal differs")
	waitReady(t, types.NamespacedName{Namespace: ns, Name: "journal-copy"}, 1)
}

// writeJournal runs a real echo server on dataDir and has it journal n requests.
func writeJournal(t *testing.T, dataDir string, n int) {
	t.Helper()
	srv, err := echoserver.New(echoserver.Config{Message: "e2e", Instance: "journal-0", DataDir: dataDir})
	Expect(err).NotTo(HaveOccurred())
	web := httptest.NewServer(srv.Handler())
	for i := range n {
		resp, err := http.Post(web.URL+fmt.Sprintf("/items/%d", i), "text/plain", strings.NewReader(fmt.Sprintf("entry %d", i)))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		_ = resp.Body.Close()
	}
	web.Close()
	Expect(srv.Close()).To(Succeed())
}

func waitBackupComplete(t *testing.T, key types.NamespacedName) *echov1alpha1.EchoBackup {
	t.Helper()
	b := &echov1alpha1.EchoBackup{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), key, b)).To(Succeed())
		g.Expect(meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed)).To(BeNil(), "%s", b.Status.Error)
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	return b
}

func TestBackupsEndToEnd(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	s3 := s3server.Start(t, "echo-backups")
	ns := newRestrictedNamespace(t)
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(ns))).To(Succeed())
	storage := s3.Storage("echo-backups", "e2e")

	key := types.NamespacedName{Namespace: ns, Name: "journal"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoSpec{
			Replicas:    ptr.To[int32](1),
			Persistence: &echov1alpha1.PersistenceSpec{Enabled: true},
			Backup:      &echov1alpha1.EchoBackupPolicy{BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true, Storage: &storage}},
		},
	})).To(Succeed())
	waitReady(t, key, 1)

	// The Echo's data: a journal a real echo server wrote.
	data := t.TempDir()
	writeJournal(t, data, 25)
	journal, err := os.ReadFile(filepath.Join(data, "journal", "journal-0.jsonl"))
	Expect(err).NotTo(HaveOccurred())

	t.Run("on demand", func(t *testing.T) {
		RegisterTestingT(t)
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: key.Name, Storage: storage}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		job := waitJobNamed(t, ns, "journal-1-backup")

		var result struct {
			Size     int64  `json:"size"`
			Checksum string `json:"checksum"`
			Location string `json:"location"`
		}
		Expect(json.Unmarshal([]byte(runMoverForJob(t, job, data, s3)), &result)).To(Succeed())
		got := waitBackupComplete(t, client.ObjectKeyFromObject(b))
		Expect(got.Status.Size).To(Equal(result.Size))
		Expect(got.Status.Checksum).To(Equal(result.Checksum))
		Expect(got.Status.Checksum).To(HavePrefix("sha256:"))
		Expect(got.Status.Location).To(ContainSubstring("e2e/" + ns + "/journal/journal-1"))
	})

	t.Run("final backup before delete, then the data comes back", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Delete(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
		final := *finalBackupNamed(t, ns, key.Name)
		job := waitJobNamed(t, ns, final.Name+"-backup")
		Expect(k8sClient.Get(ctx, key, &echov1alpha1.Echo{})).To(Succeed(), "the Echo waits for its final backup")

		runMoverForJob(t, job, data, s3)
		final = *waitBackupComplete(t, client.ObjectKeyFromObject(&final))
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &echov1alpha1.Echo{}))).To(BeTrue())
			pvcs := &corev1.PersistentVolumeClaimList{}
			g.Expect(k8sClient.List(ctx, pvcs, client.InNamespace(ns))).To(Succeed())
			g.Expect(pvcs.Items).To(BeEmpty())
		}, timeout, interval).Should(Succeed())

		// Disaster recovery: a namespace with no EchoBackup restores the
		// bare artifact into a new Echo, the data mover running the Jobs'
		// own arguments; the journal comes back byte for byte.
		dr := newRestrictedNamespace(t)
		Expect(k8sClient.Create(ctx, s3.CredentialsSecret(dr))).To(Succeed())
		restore := &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: dr, Name: "recover"},
			Spec: echov1alpha1.EchoRestoreSpec{
				Source:   echov1alpha1.RestoreSource{Storage: &storage, Key: ns + "/journal/" + final.Name},
				EchoName: "journal",
			},
		}
		Expect(k8sClient.Create(ctx, restore)).To(Succeed())
		runMoverForJob(t, waitJobNamed(t, dr, "recover-inspect"), "", s3)

		restoredKey := types.NamespacedName{Namespace: dr, Name: "journal"}
		Eventually(func(g Gomega) string {
			c := meta.FindStatusCondition(getEcho(g, restoredKey).Status.Conditions, echov1alpha1.EchoConditionReady)
			g.Expect(c).NotTo(BeNil())
			return c.Reason
		}, timeout, interval).Should(Equal(echov1alpha1.EchoReasonRestoring), "the new Echo runs no pod before its data is in place")
		Expect(getEcho(Default, restoredKey).Spec.Persistence.Enabled).To(BeTrue(), "the Echo comes from the backed-up configuration")

		restored := t.TempDir()
		runMoverForJob(t, waitJobNamed(t, dr, "recover-restore"), restored, s3)
		got, err := os.ReadFile(filepath.Join(restored, "journal", "journal-0.jsonl"))
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(got, journal)).To(BeTrue(), "the restored journal differs")

		waitReady(t, restoredKey, 1)
		Eventually(func(g Gomega) {
			rs := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(restore), rs)).To(Succeed())
			g.Expect(meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)).To(BeNil(), "%s", rs.Status.Error)
			g.Expect(meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete)).To(BeTrue())
			g.Expect(rs.Status.RestoredFrom).To(HaveSuffix("/" + final.Name))
			g.Expect(rs.Status.EchoCreated).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})
}

// TestFinalBackupTurnedOnJustBeforeDelete turns the final backup of three
// running Echoes on and deletes each a moment later, as a user's script
// would, with nothing awaited in between: each is kept until its final
// backup, taken by the real data mover, has completed.
func TestFinalBackupTurnedOnJustBeforeDelete(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	s3 := s3server.Start(t, "echo-backups")
	ns := newRestrictedNamespace(t)
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(ns))).To(Succeed())
	storage := s3.Storage("echo-backups", "race")
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"backup": echov1alpha1.EchoBackupPolicy{
		BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true, Storage: &storage}}}})
	Expect(err).NotTo(HaveOccurred())

	names := []string{"late-1", "late-2", "late-3"}
	for _, name := range names {
		Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}},
		})).To(Succeed())
	}
	for _, name := range names {
		waitReady(t, types.NamespacedName{Namespace: ns, Name: name}, 1)
	}
	for _, name := range names {
		e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		Expect(k8sClient.Patch(ctx, e, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		Expect(k8sClient.Delete(ctx, e)).To(Succeed())
	}

	data := t.TempDir()
	writeJournal(t, data, 3)
	for _, name := range names {
		final := finalBackupNamed(t, ns, name)
		runMoverForJob(t, waitJobNamed(t, ns, final.Name+"-backup"), data, s3)
		b := waitBackupComplete(t, client.ObjectKeyFromObject(final))
		Expect(b.Status.Location).To(ContainSubstring("race/" + ns + "/" + name + "/"))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &echov1alpha1.Echo{}))
		}, timeout, interval).Should(BeTrue(), "Echo %s is deleted once its final backup completed", name)
	}
}

// finalBackupNamed waits for the final backup of an Echo to exist.
func finalBackupNamed(t *testing.T, ns, echo string) *echov1alpha1.EchoBackup {
	t.Helper()
	var final echov1alpha1.EchoBackup
	Eventually(func(g Gomega) {
		list := &echov1alpha1.EchoBackupList{}
		g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{echov1alpha1.FinalBackupOfLabel: echo})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		final = list.Items[0]
	}, timeout, interval).Should(Succeed(), "Echo %s was deleted right after its final backup was turned on: no final backup", echo)
	return &final
}
