package e2e

import (
	"context"
	"testing"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// TestBackupsThroughALocation backs up and restores a journal the echo
// server wrote through storage.locationRef, against the real S3 server,
// and deletes the location as the docs show: it waits for its backup.
func TestBackupsThroughALocation(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	s3 := s3server.StartAt(t, storageHost, "echo-backups")
	ns := newRestrictedNamespace(t)
	newLocation(t, s3, ns, "offsite", "team-a")
	atLocation := echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "offsite"}}
	key := types.NamespacedName{Namespace: ns, Name: "journal"}
	data, journal := journaledEcho(t, key, "")

	backup := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: key.Name, Storage: atLocation}}
	Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	runMoverForJob(t, waitJobNamed(t, ns, "journal-1-backup"), data, s3)
	backup = waitBackupComplete(t, client.ObjectKeyFromObject(backup))
	Expect(backup.Status.Location).To(HaveSuffix("echo-backups/team-a/"+ns+"/journal/journal-1"), "the artifact is where the location says")

	d := &docsKubectl{ns: ns, values: map[string]string{"LOCATION": "offsite"}}
	t.Run("a location in use waits for what uses it", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(d.run(Default, documented("delete", "echobackuplocation", "LOCATION", "--wait=false"))).
			To(ContainSubstring(`echobackuplocation.echo.dev "offsite" deleted`))
		Eventually(func(g Gomega) string {
			return d.run(g, documented("describe", "echobackuplocation", "LOCATION"))
		}, timeout, interval).Should(And(
			MatchRegexp(`(?m)^\s+Reason:\s+LocationInUse$`),
			ContainSubstring("EchoBackup journal-1"),
			MatchRegexp(`(?m)^Events:\n(.*\n)*.*\sWarning\s+`+echov1alpha1.EventReasonLocationInUse+`\s`)))
	})

	t.Run("a restore reads through the location being deleted", func(t *testing.T) {
		RegisterTestingT(t)
		restore := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: backup.Name}, EchoName: "journal-copy"}}
		Expect(k8sClient.Create(ctx, restore)).To(Succeed())
		expectRestored(t, s3, ns, "copy", "journal-copy", journal)
		Eventually(func(g Gomega) {
			rs := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(restore), rs)).To(Succeed())
			g.Expect(meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)).To(BeNil(), "%s", rs.Status.Error)
			g.Expect(rs.Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the location goes with its last backup", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Delete(ctx, backup)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "offsite"}, &echov1alpha1.EchoBackupLocation{})
		}, timeout, interval).ShouldNot(Succeed())
		var kept []string
		for o := range s3.Client(t).ListObjects(ctx, "echo-backups", minio.ListObjectsOptions{Prefix: "team-a/" + ns + "/journal/journal-1/", Recursive: true}) {
			Expect(o.Err).NotTo(HaveOccurred())
			kept = append(kept, o.Key)
		}
		Expect(kept).NotTo(BeEmpty(), "a Retain backup leaves its artifact")
	})
}
