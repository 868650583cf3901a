package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// TestKubectlEchoScripting runs the plugin as scripts do, typed as
// docs/kubectl-plugin.md#scripting shows: -o json and -o name, --wait
// that succeeds, fails with the reason, or times out, restore --dry-run,
// and shell completion, through kubectl and the shipped
// kubectl_complete-echo, against the real manager and a real S3 server.
func TestKubectlEchoScripting(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	s3 := s3server.StartAt(t, storageHost, "echo-backups")
	ns := newRestrictedNamespace(t)
	newLocation(t, s3, ns, "offsite", "scripting")
	key := types.NamespacedName{Namespace: ns, Name: "journal"}
	data, _ := journaledEcho(t, key, "first")
	// plain keeps no data: a backup that holds some cannot be restored into it.
	plain := types.NamespacedName{Namespace: ns, Name: "plain"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: plain.Name},
		Spec: echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Message: "plain"}})).To(Succeed())
	waitReady(t, plain, 1)
	pluginPath := buildPlugin(t)
	d := &docsKubectl{ns: ns, env: []string{pluginPath},
		values: map[string]string{"ECHO": key.Name, "RESTORED": "journal-copy", "PLAIN": plain.Name, "REVISION": "1", "TIMEOUT": "3s"}}

	t.Run("status -o json prints the Echo, -o name its name", func(t *testing.T) {
		RegisterTestingT(t)
		out := d.run(Default, documented("echo", "status", "ECHO", "-o", "json"))
		t.Logf("kubectl echo status journal -o json:\n%s", out)
		var echo echov1alpha1.Echo
		Expect(json.Unmarshal([]byte(out), &echo)).To(Succeed(), out)
		Expect(echo.APIVersion).To(Equal("echo.dev/v1alpha1"))
		Expect(echo.Kind).To(Equal("Echo"))
		Expect(echo.Name).To(Equal("journal"))
		Expect(echo.Status.ObservedGeneration).To(Equal(echo.Generation))
		Expect(echo.ManagedFields).To(BeEmpty(), "managed fields are left out, as kubectl does")
		Expect(d.run(Default, documented("echo", "status", "ECHO", "-o", "name"))).To(Equal("echo.echo.dev/journal\n"))
		wide := d.run(Default, documented("echo", "status", "ECHO", "-o", "wide"))
		t.Logf("kubectl echo status journal -o wide:\n%s", wide)
		Expect(wide).To(MatchRegexp(`(?m)^Generation:\s+1, observed 1$`))
		Expect(wide).To(MatchRegexp(`(?m)^Conditions:\s+Ready=True \(Available\), `))
	})

	t.Run("backup --wait -o name: the name once the backup has completed", func(t *testing.T) {
		RegisterTestingT(t)
		bg := d.start(t, documented("echo", "backup", "ECHO", "--wait", "-o", "name"))
		name := newBackupOf(t, ns, key.Name, nil)
		d.values["BACKUP"] = name
		runMoverForJob(t, waitJobNamed(t, ns, name+"-backup"), data, s3)
		out := bg.exit()
		t.Logf("kubectl echo backup journal --wait -o name:\n%s", out)
		Expect(out).To(MatchRegexp(`(?m)^EchoBackup ` + name + `: Running \(BackingUp\): `))
		Expect(out).To(MatchRegexp(`(?m)^EchoBackup ` + name + `: Completed \(Completed\)`))
		Expect(out).To(HaveSuffix("\nechobackup.echo.dev/" + name + "\n"))
		waitBackupComplete(t, types.NamespacedName{Namespace: ns, Name: name})
	})

	t.Run("backup --wait fails when the timeout passes", func(t *testing.T) {
		RegisterTestingT(t)
		before := backupNames(t, ns)
		out, err := d.output(documented("echo", "backup", "ECHO", "--wait", "--timeout", "TIMEOUT"))
		t.Logf("kubectl echo backup journal --wait --timeout 3s:\n%s", out)
		Expect(err).To(HaveOccurred(), "a wait that times out fails:\n%s", out)
		Expect(out).To(ContainSubstring("Created EchoBackup journal-"))
		Expect(out).To(MatchRegexp(`Error: timed out after 3s waiting for EchoBackup journal-\S+; last seen: EchoBackup journal-\S+: (Pending|Running)`))
		// The mover of the backup left running finishes it.
		name := newBackupOf(t, ns, key.Name, before)
		runMoverForJob(t, waitJobNamed(t, ns, name+"-backup"), data, s3)
		waitBackupComplete(t, types.NamespacedName{Namespace: ns, Name: name})
	})

	t.Run("restore --dry-run into a new Echo writes nothing", func(t *testing.T) {
		RegisterTestingT(t)
		out := d.run(Default, documented("echo", "restore", "BACKUP", "--to", "RESTORED", "--dry-run"))
		t.Logf("kubectl echo restore %s --to journal-copy --dry-run:\n%s", d.values["BACKUP"], out)
		Expect(out).To(MatchRegexp(`(?m)^Backup:\s+` + d.values["BACKUP"] + ` of Echo journal, completed \S+: \d+ bytes, \d+ files?, Echo generation 1$`))
		Expect(out).To(MatchRegexp(`(?m)^Storage:\s+EchoBackupLocation offsite, at s3://echo-backups/\S*` + d.values["BACKUP"] + `$`))
		Expect(out).To(MatchRegexp(`(?m)^Target:\s+Echo journal-copy does not exist: the restore creates it`))
		Expect(out).To(MatchRegexp(`(?m)^API server:\s+accepts the EchoRestore journal-copy-restore-\S+ \(dry run\)$`))
		Expect(out).To(ContainSubstring("The restore would start"))
		expectNoRestores(ns)
	})

	t.Run("restore --dry-run in place says what becomes of the data, and shows what admission refuses", func(t *testing.T) {
		RegisterTestingT(t)
		out := d.run(Default, documented("echo", "restore", "BACKUP", "--to", "ECHO", "--dry-run"))
		t.Logf("kubectl echo restore %s --to journal --dry-run:\n%s", d.values["BACKUP"], out)
		Expect(out).To(MatchRegexp(`(?m)^Target:\s+Echo journal exists: the restore restores in place`))
		Expect(out).To(MatchRegexp(`(?m)^Existing data:\s+Fail: if Echo journal's volume holds data, the restore refuses to write over it and fails with TargetHasData`))
		out = d.run(Default, documented("echo", "restore", "BACKUP", "--to", "ECHO", "--dry-run", "--existing-data", "Replace"))
		Expect(out).To(MatchRegexp(`(?m)^Existing data:\s+Replace: the data in Echo journal's volume is replaced, the old data kept aside`))

		out, err := d.output(documented("echo", "restore", "BACKUP", "--to", "ECHO", "--dry-run", "--existing-data", "Keep"))
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("The restore would fail:\n  - The API server refuses the EchoRestore: "))
		Expect(out).To(ContainSubstring(`Unsupported value: "Keep"`))
		expectNoRestores(ns)
	})

	t.Run("restore --dry-run prints every reason, and restore --wait fails with it", func(t *testing.T) {
		RegisterTestingT(t)
		out, err := d.output(documented("echo", "restore", "BACKUP", "--to", "PLAIN", "--dry-run"))
		t.Logf("kubectl echo restore %s --to plain --dry-run:\n%s", d.values["BACKUP"], out)
		Expect(err).To(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?m)^  - Echo plain keeps no data but the backup holds \d+ files?: the restore would fail with TargetHasNoVolume`))
		expectNoRestores(ns)

		bg := d.start(t, documented("echo", "restore", "BACKUP", "--to", "PLAIN", "--wait"))
		var restore string
		Eventually(func(g Gomega) {
			m := regexp.MustCompile(`Created EchoRestore (plain-restore-\S+)`).FindStringSubmatch(bg.output())
			g.Expect(m).NotTo(BeNil())
			restore = m[1]
		}, timeout, interval).Should(Succeed())
		runMoverForJob(t, waitJobNamed(t, ns, restore+"-inspect"), "", s3)
		Eventually(bg.done, timeout, interval).Should(BeClosed())
		t.Logf("kubectl echo restore %s --to plain --wait:\n%s", d.values["BACKUP"], bg.output())
		Expect(bg.err).To(HaveOccurred(), "a failed restore fails the command:\n%s", bg.output())
		Expect(bg.output()).To(ContainSubstring("Error: EchoRestore " + restore + " failed (TargetHasNoVolume): Echo plain keeps no data"))
	})

	t.Run("rollback --wait returns once the Echo is Ready with the rolled-back spec", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = "second" })
		waitReady(t, key, 1)
		Eventually(func(g Gomega) string { return d.run(g, documented("echo", "history", "ECHO", "-o", "name")) }, timeout, interval).
			Should(Equal("echorevision.live.echo.dev/journal.v1\nechorevision.live.echo.dev/journal.v2\n"))
		out := d.run(Default, documented("echo", "rollback", "ECHO", "--to-revision", "REVISION", "--yes", "--wait"))
		t.Logf("kubectl echo rollback journal --to-revision 1 --yes --wait:\n%s", out)
		echo := getEcho(Default, key)
		Expect(echo.Spec.Message).To(Equal("first"))
		Expect(out).To(HaveSuffix("Echo journal is Ready at generation 3\n"))
		Expect(echo.Status.ObservedGeneration).To(BeNumerically(">=", 3))
		Expect(d.run(Default, documented("echo", "history", "ECHO", "-o", "name"))).
			To(Equal("echorevision.live.echo.dev/journal.v1\nechorevision.live.echo.dev/journal.v2\nechorevision.live.echo.dev/journal.v3\n"))
		history := d.run(Default, documented("echo", "history", "ECHO", "-o", "json"))
		var list struct {
			Kind  string
			Items []struct{ Kind, Status string }
		}
		Expect(json.Unmarshal([]byte(history), &list)).To(Succeed(), history)
		Expect(list.Kind).To(Equal("List"))
		Expect(list.Items).To(HaveLen(3))
		Expect(list.Items[2].Kind).To(Equal("EchoRevision"))
	})

	t.Run("completion of Echo names, by the plugin and through kubectl", func(t *testing.T) {
		RegisterTestingT(t)
		pluginDir := strings.SplitN(strings.TrimPrefix(pluginPath, "PATH="), string(os.PathListSeparator), 2)[0]
		connection := []string{"--kubeconfig", cluster.KubeconfigPath(), "-n", ns}
		complete := exec.Command(filepath.Join(pluginDir, "kubectl-echo"), append([]string{"__complete", "status"}, append(connection, "")...)...)
		out, err := complete.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(HavePrefix("journal\nplain\n:4\n"))

		// kubectl completes `kubectl echo ...` with kubectl_complete-echo
		// from the PATH, as docs/kubectl-plugin.md installs it.
		viaKubectl := exec.Command(kubectlBin, append(append([]string{"__complete", "echo", "restore"}, connection...), "--to", "j")...)
		viaKubectl.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+filepath.Join(repoRoot, "plugins")+
			string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err = viaKubectl.Output()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(HavePrefix("journal\n:4\n"), "the Echo journal, and no other")

		Expect(d.run(Default, documented("echo", "completion", "bash"))).To(ContainSubstring("__start_kubectl-echo"))
	})
}

// backupNames are the names of the EchoBackups of namespace ns.
func backupNames(t *testing.T, ns string) map[string]bool {
	t.Helper()
	list := &echov1alpha1.EchoBackupList{}
	Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	names := map[string]bool{}
	for _, b := range list.Items {
		names[b.Name] = true
	}
	return names
}

// newBackupOf waits for an EchoBackup of the Echo echo in namespace ns
// that is not among before, and returns its name.
func newBackupOf(t *testing.T, ns, echo string, before map[string]bool) string {
	t.Helper()
	var name string
	Eventually(func(g Gomega) {
		list := &echov1alpha1.EchoBackupList{}
		g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		name = ""
		for _, b := range list.Items {
			if b.Spec.EchoName == echo && !before[b.Name] {
				name = b.Name
			}
		}
		g.Expect(name).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	return name
}

// expectNoRestores checks that namespace ns holds no EchoRestore.
func expectNoRestores(ns string) {
	list := &echov1alpha1.EchoRestoreList{}
	Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	Expect(list.Items).To(BeEmpty(), "a dry run wrote an EchoRestore")
}
