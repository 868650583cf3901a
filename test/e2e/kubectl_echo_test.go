package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// buildPlugin builds kubectl-echo into a directory of its own and returns
// the PATH entry that makes kubectl find it, as a user's install does.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-echo"), "./cmd/kubectl-echo")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	return "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestKubectlEchoPlugin backs up, lists, restores, inspects and rolls back
// an Echo with the plugin alone, typed as docs/kubectl-plugin.md shows,
// against the real manager and the real S3 server.
func TestKubectlEchoPlugin(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	s3 := s3server.StartAt(t, storageHost, "echo-backups")
	ns := newRestrictedNamespace(t)
	newLocation(t, s3, ns, "offsite", "plugin")
	key := types.NamespacedName{Namespace: ns, Name: "journal"}
	data, journal := journaledEcho(t, key, "first")
	d := &docsKubectl{ns: ns, env: []string{buildPlugin(t)},
		values: map[string]string{"ECHO": key.Name, "LOCATION": "offsite", "SCHEDULE": "journal-nightly", "RESTORED": "journal-copy",
			"REVISION": "1"}}

	t.Run("help", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(d.run(Default, documented("plugin", "list"))).To(ContainSubstring("kubectl-echo"), "kubectl finds the plugin on the PATH")
		Expect(d.run(Default, documented("echo"))).To(ContainSubstring("Available Commands"))
		Expect(d.run(Default, documented("echo", "--help"))).To(And(ContainSubstring("rollback"), ContainSubstring("backups")))
		d.values["COMMAND"] = "rollback"
		Expect(d.run(Default, documented("echo", "COMMAND", "--help"))).To(ContainSubstring("--to-revision"))
	})

	t.Run("back up now, to the namespace's location", func(t *testing.T) {
		RegisterTestingT(t)
		out := d.run(Default, documented("echo", "backup", "ECHO"))
		m := regexp.MustCompile(`Created EchoBackup (journal-\S+) of Echo journal to location offsite`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), out)
		d.values["BACKUP"] = m[1]
		runMoverForJob(t, waitJobNamed(t, ns, m[1]+"-backup"), data, s3)
		waitBackupComplete(t, types.NamespacedName{Namespace: ns, Name: m[1]})
		Expect(d.run(Default, documented("echo", "backup", "ECHO", "--location", "LOCATION"))).To(ContainSubstring("to location offsite"))
	})

	t.Run("the backup's log, which no kubelet serves here", func(t *testing.T) {
		RegisterTestingT(t)
		// KWOK's nodes serve no log: the backup keeps why, once, and the
		// outcome was recorded all the same (waitBackupComplete).
		backup := &echov1alpha1.EchoBackup{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: d.values["BACKUP"]}, backup)).To(Succeed())
		Expect(backup.Status.MoverLog).NotTo(BeNil())
		Expect(backup.Status.MoverLog.Job).To(Equal(d.values["BACKUP"] + "-backup"))
		Expect(backup.Status.MoverLog.Unavailable).NotTo(BeEmpty())
		cmd, err := d.command(ctx, documented("echo", "logs", "BACKUP"))
		Expect(err).NotTo(HaveOccurred())
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred(), "no log was kept: %s", out)
		Expect(string(out)).To(ContainSubstring("could not be kept"))
	})

	t.Run("status", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "status", "ECHO")) }, timeout, interval).Should(And(
			MatchRegexp(`(?m)^Ready:\s+True \(Available\)`),
			MatchRegexp(`(?m)^Replicas:\s+1 ready, 1 available, 1 updated, of 1$`),
			MatchRegexp(`(?m)^Address:\s+http://journal\.`+ns+`\.svc:80$`),
			MatchRegexp(`(?m)^Last backup:\s+`+d.values["BACKUP"]+`, completed `),
			MatchRegexp(`(?m)^Next backup:\s+none scheduled$`),
			MatchRegexp(`(?m)^Last restore test:\s+none$`),
			MatchRegexp(`(?m)^1\s+deployed\s+echo-\S+`),
			MatchRegexp(`(?m)^\S+\s+Normal\s+Ready\s`)))
	})

	t.Run("the backups a location holds", func(t *testing.T) {
		RegisterTestingT(t)
		row := `(?m)^offsite\.` + ns + `\.journal\.` + d.values["BACKUP"] + `\s+` + ns + `/journal\s+` + d.values["BACKUP"] + `\s+\d+\s+true\s`
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "backups", "--location", "LOCATION")) }, timeout, interval).
			Should(MatchRegexp(row))
		Expect(d.run(Default, documented("echo", "backups"))).To(MatchRegexp(row))
	})

	t.Run("restore into a new Echo", func(t *testing.T) {
		RegisterTestingT(t)
		out := d.run(Default, documented("echo", "restore", "BACKUP", "--to", "RESTORED"))
		m := regexp.MustCompile(`Created EchoRestore (journal-copy-restore-\S+) of EchoBackup`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), out)
		expectRestored(t, s3, ns, m[1], "journal-copy", journal)
		d.values["RESTORE"] = m[1]
		cmd, err := d.command(ctx, documented("echo", "logs", "restore/RESTORE"))
		Expect(err).NotTo(HaveOccurred())
		logs, _ := cmd.CombinedOutput()
		Expect(string(logs)).To(Or(ContainSubstring("could not be kept"), ContainSubstring("has no data mover log yet")),
			"the restore's log, which no kubelet serves here")
	})

	t.Run("history and rollback", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = "second" })
		waitReady(t, key, 1)
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "history", "ECHO")) }, timeout, interval).
			Should(And(MatchRegexp(`(?m)^1\s+superseded\s`), MatchRegexp(`(?m)^2\s+deployed\s`)))

		out := d.run(Default, documented("echo", "rollback", "ECHO", "--to-revision", "REVISION", "--dry-run"))
		Expect(out).To(ContainSubstring(`message: "second" -> "first"`))
		Expect(out).To(ContainSubstring("nothing was written"))
		Expect(getEcho(Default, key).Spec.Message).To(Equal("second"))

		cmd, err := d.command(ctx, documented("echo", "rollback", "ECHO", "--to-revision", "REVISION"))
		Expect(err).NotTo(HaveOccurred())
		cmd.Stdin = strings.NewReader("n\n")
		refused, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred(), "a rollback not confirmed fails")
		Expect(string(refused)).To(ContainSubstring("not confirmed"))
		Expect(getEcho(Default, key).Spec.Message).To(Equal("second"))

		Expect(d.runWith(Default, documented("echo", "rollback", "ECHO", "--to-revision", "REVISION"), "y\n")).
			To(ContainSubstring("rolled back to the values of revision 1"))
		Expect(getEcho(Default, key).Spec.Message).To(Equal("first"))
		waitReady(t, key, 1)
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "history", "ECHO")) }, timeout, interval).
			Should(MatchRegexp(`(?m)^3\s+deployed\s`))
	})

	t.Run("back up now from a schedule", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupSchedule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-nightly"},
			Spec: echov1alpha1.EchoBackupScheduleSpec{Schedule: "30 2 * * *", Template: echov1alpha1.EchoBackupSpec{EchoName: key.Name,
				Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "offsite"}}}},
		})).To(Succeed())
		Expect(d.run(Default, documented("echo", "backup", "ECHO", "--schedule", "SCHEDULE"))).To(ContainSubstring("Asked EchoBackupSchedule journal-nightly"))
		Eventually(func(g Gomega) []string {
			list := &echov1alpha1.EchoBackupList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{echov1alpha1.ScheduleLabel: "journal-nightly"})).To(Succeed())
			var names []string
			for _, b := range list.Items {
				names = append(names, b.Name)
			}
			return names
		}, timeout, interval).Should(ConsistOf(HavePrefix("journal-nightly-now-")))
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "status", "ECHO")) }, timeout, interval).
			Should(MatchRegexp(`(?m)^Next backup:\s+\S+, by schedule journal-nightly$`))
	})

	t.Run("a copy's log, which no kubelet serves here either", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
			Spec: echov1alpha1.EchoBackupLocationSpec{S3: *s3.Storage("echo-backups", "plugin-second").S3}})).To(Succeed())
		copied := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-copied"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: key.Name,
				Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "offsite"}},
				CopyTo: []echov1alpha1.BackupCopy{{Name: "offsite",
					Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "second"}}}}}}
		Expect(k8sClient.Create(ctx, copied)).To(Succeed())
		runMoverForJob(t, waitJobNamed(t, ns, copied.Name+"-backup"), data, s3)
		waitBackupComplete(t, client.ObjectKeyFromObject(copied))
		runMoverForJob(t, waitJobNamed(t, ns, copied.Name+"-copy-offsite"), "", s3)
		Eventually(func(g Gomega) *echov1alpha1.MoverLog {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(copied), copied)).To(Succeed())
			g.Expect(copied.Status.Copies).To(ContainElement(HaveField("Phase", echov1alpha1.PhaseCompleted)))
			return copied.Status.Copies[0].MoverLog
		}, timeout, interval).Should(HaveField("Unavailable", Not(BeEmpty())), "the copy keeps why its log could not be read")
		d.values["COPIED"], d.values["COPY"] = copied.Name, "offsite"
		for _, args := range []docCommand{documented("echo", "logs", "COPIED", "--copy", "COPY"), documented("echo", "logs", "COPIED", "--copy", "offsite")} {
			cmd, err := d.command(ctx, args)
			Expect(err).NotTo(HaveOccurred())
			out, err := cmd.CombinedOutput()
			Expect(err).To(HaveOccurred(), "no log was kept: %s", out)
			Expect(string(out)).To(ContainSubstring("Job journal-copied-copy-offsite of copy offsite of EchoBackup journal-copied could not be kept"))
		}
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "status", "ECHO")) }, timeout, interval).Should(And(
			MatchRegexp(`(?m)^Last backup:\s+journal-copied, completed `),
			MatchRegexp(`(?m)^Last backup's copies:\s+offsite Completed \(Copied\)$`)))
	})
}
