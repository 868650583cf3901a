//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/moverrunner"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// kubectlDocsNamespace is the namespace of TestKubectlRunsTheDocumentedCommands.
// KWOK holds its Job pods Running until the test ends each one, so that a
// restore can be looked at while it is under way and an artifact deletion
// never finishes on its own.
const kubectlDocsNamespace = "e2e-kubectl-docs"

// docCommand is a kubectl command as README.md or docs/ shows it, without
// the word kubectl. Upper-case words (ECHO, RESTORE, FILE) stand for the
// names the test gives them.
type docCommand struct{ args []string }

// documented declares a command of the documentation that a test runs.
// test/docs reads every call of it in this package, whose arguments must
// be string literals, and fails when the documentation shows a kubectl
// command that no call covers.
func documented(args ...string) docCommand { return docCommand{args: args} }

func (c docCommand) String() string { return "kubectl " + strings.Join(c.args, " ") }

// docsKubectl runs documented commands with the real kubectl against the
// simulated cluster, in namespace ns unless the command names one.
type docsKubectl struct {
	ns string
	// values are the names the placeholders of the commands stand for.
	values map[string]string
	// env is added to the commands' environment (a PATH holding plugins).
	env []string
}

// plugins are the kubectl plugins the docs show. kubectl reads the flags
// before a plugin's name as its own and then finds no plugin: the
// connection flags go after the plugin's arguments, where it reads them.
var plugins = map[string]bool{"echo": true}

var placeholderWord = regexp.MustCompile(`\b[A-Z][A-Z0-9_]+\b`)

func (d *docsKubectl) command(ctx context.Context, c docCommand) (*exec.Cmd, error) {
	connection := []string{"--kubeconfig", cluster.KubeconfigPath()}
	namespaced := false
	for _, a := range c.args {
		namespaced = namespaced || a == "-n" || a == "--namespace" || strings.HasPrefix(a, "--namespace=")
	}
	if !namespaced {
		connection = append(connection, "-n", d.ns)
	}
	var args, missing []string
	for _, a := range c.args {
		args = append(args, placeholderWord.ReplaceAllStringFunc(a, func(w string) string {
			v, ok := d.values[w]
			if !ok {
				missing = append(missing, w)
			}
			return v
		}))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no value for %s", c, strings.Join(missing, ", "))
	}
	if len(c.args) > 0 && plugins[c.args[0]] {
		args = append(args, connection...)
	} else {
		args = append(connection, args...)
	}
	cmd := exec.CommandContext(ctx, kubectlBin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), d.env...)
	return cmd, nil
}

// run runs c and returns its combined output; c must succeed.
func (d *docsKubectl) run(g Gomega, c docCommand) string {
	return d.runWith(g, c, "")
}

// runWith runs c with stdin as its standard input and env added to its
// environment.
func (d *docsKubectl) runWith(g Gomega, c docCommand, stdin string, env ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := d.command(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s:\n%s", c, out)
	return string(out)
}

// output runs c and returns its combined output and its error: for
// commands that are expected to fail.
func (d *docsKubectl) output(c docCommand) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := d.command(ctx, c)
	if err != nil {
		return "", err
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start runs c in the background until it exits or the test ends.
func (d *docsKubectl) start(t *testing.T, c docCommand) *backgroundKubectl {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := d.command(ctx, c)
	Expect(err).NotTo(HaveOccurred())
	b := &backgroundKubectl{c: c, cancel: cancel, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &b.out, &b.out
	Expect(cmd.Start()).To(Succeed())
	go func() {
		b.err = cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() { b.stop() })
	return b
}

// backgroundKubectl is a kubectl command running in the background: a
// watch, or a wait.
type backgroundKubectl struct {
	c      docCommand
	cancel context.CancelFunc
	out    lockedBuffer
	done   chan struct{}
	err    error
}

// output is what the command printed so far.
func (b *backgroundKubectl) output() string { return b.out.String() }

// exit waits for the command to exit on its own, and returns its output;
// it must succeed.
func (b *backgroundKubectl) exit() string {
	Eventually(b.done, timeout, interval).Should(BeClosed(), "%s did not exit:\n%s", b.c, b.output())
	Expect(b.err).NotTo(HaveOccurred(), "%s:\n%s", b.c, b.output())
	return b.output()
}

// stop ends the command and returns its output.
func (b *backgroundKubectl) stop() string {
	b.cancel()
	<-b.done
	return b.output()
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// The tables kubectl prints for the operator's kinds.
const (
	echoHeader     = `(?m)^NAME\s+READY\s+REASON\s+REPLICAS\s+AVAILABLE\s+AGE$`
	backupHeader   = `(?m)^NAME\s+ECHO\s+PHASE\s+REASON\s+SIZE\s+AGE$`
	scheduleHeader = `(?m)^NAME\s+ECHO\s+SCHEDULE\s+SUSPEND\s+LAST\s+NEXT\s+AGE$`
	restoreHeader  = `(?m)^NAME\s+ECHO\s+PHASE\s+REASON\s+AGE$`
)

// Every kubectl command README.md and docs/ show runs here, as they show
// it, with the real kubectl against the operator, and prints what the
// documentation says it does. test/docs fails when the documentation
// shows a command not declared here with documented(...).
//
// The commands name an Echo by the singular resource name: "echo" must
// name the kind, not a category too (kubectl then refuses "get echo NAME"
// with "you must specify only one resource"). The operator's kinds share
// the category echo-operator.
func TestKubectlRunsTheDocumentedCommands(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := kubectlDocsNamespace
	Expect(createNamespace(ctx, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})).To(Succeed())
	d := &docsKubectl{ns: ns, values: map[string]string{}}
	// Each step fails on its own; the steps share the cluster's state.
	step := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			RegisterTestingT(t)
			f(t)
		})
		RegisterTestingT(t)
	}

	// The sample of the README, applied as the docs apply a manifest.
	sample := types.NamespacedName{Namespace: ns, Name: "echo-sample"}
	d.values["ECHO"] = sample.Name
	d.values["FILE"] = filepath.Join(repoRoot, "config", "samples", "echo_v1alpha1_echo.yaml")

	step("apply a manifest and wait for the Echo", func(t *testing.T) {
		Expect(d.run(Default, documented("apply", "-f", "FILE"))).To(ContainSubstring("echo.echo.dev/echo-sample created"))
		waitReady(t, sample, 2)
		Expect(d.run(Default, documented("wait", "--for=condition=Ready", "echo/ECHO"))).
			To(ContainSubstring("echo.echo.dev/echo-sample condition met"))
	})

	step("list and show Echoes", func(t *testing.T) {
		row := `(?m)^echo-sample\s+True\s+Available\s+2\s+2\s+\S+$`
		for _, out := range []string{
			d.run(Default, documented("get", "echoes")),
			d.run(Default, documented("get", "echo", "ECHO")),
			d.run(Default, documented("get", "ec")),
		} {
			Expect(out).To(MatchRegexp(echoHeader))
			Expect(out).To(MatchRegexp(row))
		}
		Expect(d.run(Default, documented("get", "echoes", "-A"))).
			To(MatchRegexp(`(?m)^` + ns + `\s+echo-sample\s+True\s+Available\s+2\s+2\s+`))

		wide := d.run(Default, documented("get", "echo", "-o", "wide"))
		Expect(wide).To(MatchRegexp(`(?m)^NAME\s+READY\s+REASON\s+REPLICAS\s+AVAILABLE\s+ADDRESS\s+IMAGE\s+LAST BACKUP\s+NEXT BACKUP\s+AGE$`))
		Expect(wide).To(MatchRegexp(`(?m)^echo-sample\s+True\s+Available\s+2\s+2\s+http://echo-sample\.` + ns + `\.svc:80\s`))

		all := d.run(Default, documented("get", "all"))
		for _, name := range []string{"echo.echo.dev/echo-sample", "deployment.apps/echo-sample", "service/echo-sample"} {
			Expect(all).To(ContainSubstring(name))
		}

		// The defaults the API server applied.
		yaml := d.run(Default, documented("get", "echo", "ECHO", "-o", "yaml"))
		for _, field := range []string{"imagePullPolicy: IfNotPresent", "port: 8080", "message: Hello from echo-sample"} {
			Expect(yaml).To(MatchRegexp(`(?m)^\s+` + regexp.QuoteMeta(field) + `$`))
		}

		// The Ready Event is recorded just after the condition.
		Eventually(func(g Gomega) {
			desc := d.run(g, documented("describe", "echo", "ECHO"))
			g.Expect(desc).To(MatchRegexp(`(?m)^Name:\s+echo-sample$`))
			g.Expect(desc).To(MatchRegexp(`(?m)^\s+Type:\s+Ready$`))
			g.Expect(desc).To(MatchRegexp(`(?m)^Events:\n(.*\n)*.*\s` + echov1alpha1.EventReasonReady + `\s`))
		}, timeout, interval).Should(Succeed())

		Expect(d.run(Default, documented("events", "--for", "echo/ECHO"))).To(ContainSubstring(echov1alpha1.EventReasonReady))
		Expect(d.run(Default, documented("events"))).To(MatchRegexp(`(?m)\s` + echov1alpha1.EventReasonReady + `\s+[Ee]cho/echo-sample\s`))

		explain := d.run(Default, documented("explain", "echo.spec"))
		Expect(explain).To(MatchRegexp(`(?m)^KIND:\s+Echo$`))
		Expect(explain).To(MatchRegexp(`(?m)^\s+replicas\s+<integer>$`))
		Expect(explain).To(MatchRegexp(`(?m)^\s+highAvailability\s+<Object>$`))
	})

	step("look at the Echo's workload", func(t *testing.T) {
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": sample.Name})).To(Succeed())
		Expect(pods.Items).To(HaveLen(2))
		d.values["POD"] = pods.Items[0].Name

		out := d.run(Default, documented("get", "pods", "-l", "app.kubernetes.io/instance=ECHO"))
		Expect(regexp.MustCompile(`(?m)^echo-sample-\S+\s+1/1\s+Running\s`).FindAllString(out, -1)).To(HaveLen(2), out)
		desc := d.run(Default, documented("describe", "pod", "POD"))
		Expect(desc).To(MatchRegexp(`(?m)^Name:\s+` + regexp.QuoteMeta(pods.Items[0].Name) + `$`))
		Expect(desc).To(MatchRegexp(`(?m)^Status:\s+Running$`))
		Expect(d.run(Default, documented("get", "deployment", "ECHO"))).To(MatchRegexp(`(?m)^echo-sample\s+2/2\s+2\s+2\s`))

		// The Deployment replaces a deleted pod.
		Expect(d.run(Default, documented("delete", "pod", "POD"))).To(ContainSubstring(fmt.Sprintf("pod %q deleted", pods.Items[0].Name)))
		Eventually(func(g Gomega) {
			now := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, now, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": sample.Name})).To(Succeed())
			g.Expect(now.Items).To(HaveLen(2))
			g.Expect(now.Items).NotTo(ContainElement(HaveField("ObjectMeta.Name", pods.Items[0].Name)))
		}, timeout, interval).Should(Succeed())
		waitReady(t, sample, 2)

		// The manager runs with leader election in its namespace.
		Expect(d.run(Default, documented("get", "lease", "echo-operator.echo.dev", "-n", "echo-operator-system"))).
			To(MatchRegexp(`(?m)^echo-operator\.echo\.dev\s+\S+`))
	})

	step("the Prometheus Operator's objects", func(t *testing.T) {
		// Its CRDs, reduced to their names, and config/prometheus, as make
		// deploy applies it where they are, and as an OLM user applies it
		// into the operator's namespace.
		d.values["CRDS"] = filepath.Join(repoRoot, "test", "olm", "testdata", "prometheus-operator-crds")
		t.Cleanup(func() {
			d.run(Default, docCommand{args: []string{"delete", "--ignore-not-found", "-f", d.values["CRDS"]}})
		})
		Expect(d.run(Default, documented("apply", "-f", "CRDS"))).
			To(ContainSubstring("customresourcedefinition.apiextensions.k8s.io/servicemonitors.monitoring.coreos.com created"))
		crds := d.run(Default, documented("get", "crd", "servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"))
		Expect(crds).To(MatchRegexp(`(?m)^servicemonitors\.monitoring\.coreos\.com\s`))
		Expect(crds).To(MatchRegexp(`(?m)^prometheusrules\.monitoring\.coreos\.com\s`))
		Eventually(func(g Gomega) {
			d.run(g, documented("apply", "--server-side", "-n", "echo-operator-system", "-k", "config/prometheus"))
		}, timeout, interval).Should(Succeed())
		out := d.run(Default, documented("get", "servicemonitor,prometheusrule", "-n", "echo-operator-system"))
		Expect(out).To(MatchRegexp(`(?m)^servicemonitor\.monitoring\.coreos\.com/echo-operator-controller-manager-metrics-monitor\s`))
		Expect(out).To(MatchRegexp(`(?m)^prometheusrule\.monitoring\.coreos\.com/echo-operator-alerts\s`))
		// Applied by hand after an OLM install, they are removed by hand.
		Expect(d.run(Default, documented("delete", "-n", "echo-operator-system", "-k", "config/prometheus"))).
			To(ContainSubstring(`prometheusrule.monitoring.coreos.com "echo-operator-alerts" deleted`))
	})

	step("change the Echo with patch, edit and scale", func(t *testing.T) {
		Expect(d.run(Default, documented("patch", "echo", "ECHO", "--type=merge", "-p", `{"spec":{"message":"Hello from kubectl patch"}}`))).
			To(ContainSubstring("echo.echo.dev/echo-sample patched"))
		expectMessageRolledOut(t, sample, "Hello from kubectl patch")

		// kubectl edit runs the editor on the object's YAML; this one
		// changes spec.message.
		editor := filepath.Join(t.TempDir(), "editor")
		Expect(os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/^  message: .*/  message: Hello from kubectl edit/' \"$1\"\n"), 0o700)).To(Succeed())
		Expect(d.runWith(Default, documented("edit", "echo", "ECHO"), "", "KUBE_EDITOR="+editor)).
			To(ContainSubstring("echo.echo.dev/echo-sample edited"))
		expectMessageRolledOut(t, sample, "Hello from kubectl edit")

		// Through the scale subresource.
		Expect(d.run(Default, documented("scale", "echo/ECHO", "--replicas=3"))).To(ContainSubstring("echo.echo.dev/echo-sample scaled"))
		waitReady(t, sample, 3)
		Expect(getEcho(Default, sample).Spec.Replicas).To(Equal(ptr.To[int32](3)))
		Expect(d.run(Default, documented("get", "echo", "ECHO"))).To(MatchRegexp(`(?m)^echo-sample\s+True\s+Available\s+3\s+3\s`))
		Expect(d.run(Default, documented("get", "deployment", "ECHO"))).To(MatchRegexp(`(?m)^echo-sample\s+3/3\s+3\s+3\s`))
	})

	step("delete release records", func(t *testing.T) {
		// A record the operator did not write is reported until it is
		// deleted.
		forged := forgedRelease(getEcho(Default, sample), "sh.helm.release.v1.echo-sample.v99", 99, gzipBase64([]byte(`{}`)))
		Expect(k8sClient.Create(ctx, forged)).To(Succeed())
		expectUntrusted(t, sample, forged.Name)
		d.values["SECRET"] = forged.Name
		Expect(d.run(Default, documented("delete", "secret", "SECRET"))).
			To(ContainSubstring(`secret "sh.helm.release.v1.echo-sample.v99" deleted`))
		expectVerified(t, sample)

		// Deleting every record of the release, as after a rotation of
		// the signing key: the release is installed again and adopts the
		// running objects.
		before := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, sample, before)).To(Succeed())
		old := latestSignedRelease(Default, sample)
		Expect(d.run(Default, documented("delete", "secret", "-l", "owner=helm,name=ECHO"))).
			To(ContainSubstring(fmt.Sprintf("secret %q deleted", old.Name)))
		Eventually(func(g Gomega) {
			g.Expect(latestSignedRelease(g, sample).UID).NotTo(Equal(old.UID))
		}, timeout, interval).Should(Succeed())
		waitReady(t, sample, 3)
		expectVerified(t, sample)
		after := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, sample, after)).To(Succeed())
		Expect(after.UID).To(Equal(before.UID), "the Deployment was adopted, not replaced")
	})

	step("create a namespace and an Echo from the standard input", func(t *testing.T) {
		recovered := ns + "-recovered"
		d.values["NEWNS"] = recovered
		Expect(d.run(Default, documented("create", "namespace", "NEWNS"))).To(ContainSubstring("namespace/" + recovered + " created"))
		// What jq writes in backup-restore.md: the backed-up Echo as JSON.
		echo := `{"apiVersion":"echo.dev/v1alpha1","kind":"Echo","metadata":{"name":"journal","labels":{},"annotations":{}},"spec":{"replicas":1}}`
		Expect(d.runWith(Default, documented("-n", "NEWNS", "create", "-f", "-"), echo)).To(ContainSubstring("echo.echo.dev/journal created"))
		waitReady(t, types.NamespacedName{Namespace: recovered, Name: "journal"}, 1)
	})

	// Backups and a restore, the data mover run for real on the held Job
	// pods.
	s3 := s3server.Start(t, "echo-backups")
	// A Secret made without the label, then labelled as backup-restore.md
	// tells: the backups below would fail without it.
	credentials := s3.CredentialsSecret(ns)
	credentials.Labels = nil
	Expect(k8sClient.Create(ctx, credentials)).To(Succeed())
	d.values["CREDENTIALS"] = credentials.Name
	Expect(d.run(Default, documented("label", "secret", "CREDENTIALS", "echo.dev/storage-credentials=true"))).
		To(ContainSubstring("secret/" + credentials.Name + " labeled"))
	storage := s3.Storage("echo-backups", "docs")
	journal := types.NamespacedName{Namespace: ns, Name: "journal"}
	data, restored := t.TempDir(), t.TempDir()
	runner := &moverrunner.Runner{Binary: op.binary, Client: k8sClient, WorkDir: t.TempDir(),
		ClaimDir: func(_, claim string) string {
			if claim == "journal-copy-data" {
				return restored
			}
			return data
		}}
	runMover := func(pod *corev1.Pod) podEnd {
		res, err := runner.Run(ctx, pod.Namespace, &pod.Spec)
		Expect(err).NotTo(HaveOccurred(), "%s", res.Output)
		return podEnd{exitCode: res.ExitCode, message: res.Message}
	}
	backup := func(t *testing.T, name string, policy echov1alpha1.DeletionPolicy) types.NamespacedName {
		t.Helper()
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: journal.Name, Storage: storage, DeletionPolicy: policy}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		endMoverPod(t, waitJobNamed(t, ns, name+"-backup"), runMover)
		waitBackupComplete(t, client.ObjectKeyFromObject(b))
		return client.ObjectKeyFromObject(b)
	}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: journal.Name},
		Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}},
	})).To(Succeed())
	waitReady(t, journal, 1)
	writeJournal(t, data, 5)

	step("list and show backups and schedules", func(t *testing.T) {
		d.values["CLAIM"] = "journal-data"
		Expect(d.run(Default, documented("get", "pvc", "CLAIM"))).To(MatchRegexp(`(?m)^journal-data\s+Bound\s`))

		d.values["BACKUP"] = backup(t, "journal-1", echov1alpha1.DeletionPolicyRetain).Name
		for _, out := range []string{
			d.run(Default, documented("get", "echobackups")),
			d.run(Default, documented("get", "ecb")),
		} {
			Expect(out).To(MatchRegexp(backupHeader))
			Expect(out).To(MatchRegexp(`(?m)^journal-1\s+journal\s+Completed\s+Completed\s+[1-9][0-9]*\s+\S+$`))
		}
		desc := d.run(Default, documented("describe", "echobackup", "BACKUP"))
		Expect(desc).To(MatchRegexp(`(?m)^Name:\s+journal-1$`))
		Expect(desc).To(MatchRegexp(`(?m)^Events:\n(.*\n)*.*\s` + echov1alpha1.EventReasonBackupCompleted + `\s`))
		Expect(d.run(Default, documented("events", "--for", "echobackup/BACKUP"))).To(ContainSubstring(echov1alpha1.EventReasonBackupCompleted))

		schedule := func(name, cron string) {
			Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupSchedule{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: echov1alpha1.EchoBackupScheduleSpec{Schedule: cron,
					Template: echov1alpha1.EchoBackupSpec{EchoName: journal.Name, Storage: storage}},
			})).To(Succeed())
		}
		schedule("journal-nightly", "30 2 * * *")
		d.values["SCHEDULE"] = "journal-nightly"
		Eventually(func(g Gomega) {
			for _, out := range []string{
				d.run(g, documented("get", "echobackupschedules")),
				d.run(g, documented("get", "ecbs")),
			} {
				g.Expect(out).To(MatchRegexp(scheduleHeader))
				g.Expect(out).To(MatchRegexp(`(?m)^journal-nightly\s+journal\s+30 2 \* \* \*\s+false\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\S+$`), "NEXT is the time of the next backup, not <invalid>")
			}
		}, timeout, interval).Should(Succeed())
		desc = d.run(Default, documented("describe", "echobackupschedule", "SCHEDULE"))
		Expect(desc).To(MatchRegexp(`(?m)^Name:\s+journal-nightly$`))
		Expect(desc).To(MatchRegexp(`(?m)^\s+Type:\s+Ready$`))

		// Back up now: the annotation starts one backup of the schedule.
		Expect(d.run(Default, documented("annotate", "echobackupschedule", "SCHEDULE", "echo.dev/backup-now=$(date +%s)", "--overwrite"))).
			To(ContainSubstring("echobackupschedule.echo.dev/journal-nightly annotated"))
		requested := regexp.MustCompile(`(?m)^(journal-nightly-now-[0-9a-f]+)\s+journal\s`)
		var name string
		Eventually(func(g Gomega) {
			out := d.run(g, documented("get", "echobackups", "-l", "echo.dev/schedule=journal-nightly"))
			g.Expect(out).To(MatchRegexp(backupHeader))
			m := requested.FindStringSubmatch(out)
			g.Expect(m).NotTo(BeNil(), "the requested backup is listed:\n%s", out)
			name = m[1]
		}, timeout, interval).Should(Succeed())
		endMoverPod(t, waitJobNamed(t, ns, name+"-backup"), runMover)
		waitBackupComplete(t, types.NamespacedName{Namespace: ns, Name: name})
		Eventually(func(g Gomega) string { return d.run(g, documented("get", "echo", "-o", "wide")) }, timeout, interval).
			Should(MatchRegexp(`(?m)^journal\s+True\s+Available\s.*\s\d+[smh]\S*\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\S+$`),
				"LAST BACKUP is the age of the requested backup, NEXT BACKUP the schedule's next run")

		// An hour of 25 passes admission; the controller says what to fix.
		schedule("journal-invalid", "0 25 * * *")
		d.values["INVALID"] = "journal-invalid"
		Eventually(func(g Gomega) string {
			return d.run(g, documented("events", "--for", "echobackupschedule/INVALID"))
		}, timeout, interval).Should(MatchRegexp(`\sWarning\s+` + echov1alpha1.EventReasonInvalidSchedule + `\s`))
	})

	step("restore into a new Echo, watching and waiting", func(t *testing.T) {
		d.values["RESTORE"], d.values["RESTORED"], d.values["JOB"] = "journal-copy", "journal-copy", "journal-copy-restore"
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-copy"},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: d.values["BACKUP"]}, EchoName: "journal-copy"},
		})).To(Succeed())
		watches := []*backgroundKubectl{
			d.start(t, documented("get", "echorestore", "RESTORE", "-w")),
			d.start(t, documented("get", "ecr", "RESTORE", "-w")),
		}
		completed := d.start(t, documented("wait", "echorestore/RESTORE", "--for=jsonpath={.status.completionTime}", "--timeout=1h"))
		succeeded := d.start(t, documented("wait", "echorestore/RESTORE", "--for=condition=Complete", "--timeout=10m"))

		endMoverPod(t, waitJobNamed(t, ns, "journal-copy-inspect"), runMover)
		// The new Echo runs no pod until its data is in place.
		Eventually(func(g Gomega) string {
			return d.run(g, documented("get", "echo", "RESTORED"))
		}, timeout, interval).Should(MatchRegexp(`(?m)^journal-copy\s+False\s+Restoring\s`))
		job := waitJobNamed(t, ns, "journal-copy-restore")
		Eventually(func(g Gomega) string {
			return d.run(g, documented("describe", "job", "JOB"))
		}, timeout, interval).Should(And(
			MatchRegexp(`(?m)^Name:\s+journal-copy-restore$`),
			MatchRegexp(`(?m)^Pods Statuses:\s+1 Active`)))
		endMoverPod(t, job, runMover)
		waitReady(t, types.NamespacedName{Namespace: ns, Name: "journal-copy"}, 1)

		Expect(completed.exit()).To(ContainSubstring("echorestore.echo.dev/journal-copy condition met"))
		Expect(succeeded.exit()).To(ContainSubstring("echorestore.echo.dev/journal-copy condition met"))
		done := `(?m)^journal-copy\s+journal-copy\s+Completed\s+Completed\s+\S+$`
		for _, w := range watches {
			Eventually(w.output, timeout, interval).Should(MatchRegexp(done), "%s", w.c)
			out := w.stop()
			Expect(out).To(MatchRegexp(restoreHeader))
			Expect(len(regexp.MustCompile(`(?m)^journal-copy\s`).FindAllString(out, -1))).
				To(BeNumerically(">=", 2), "%s streams the changes:\n%s", w.c, out)
		}

		for _, out := range []string{
			d.run(Default, documented("get", "echorestores")),
			d.run(Default, documented("get", "ecr")),
		} {
			Expect(out).To(MatchRegexp(restoreHeader))
			Expect(out).To(MatchRegexp(done))
		}
		Expect(d.run(Default, documented("get", "echorestores", "-A"))).To(MatchRegexp(`(?m)^` + ns + `\s+journal-copy\s+journal-copy\s+Completed\s+Completed\s`))
		desc := d.run(Default, documented("describe", "echorestore", "RESTORE"))
		Expect(desc).To(MatchRegexp(`(?m)^Name:\s+journal-copy$`))
		for _, reason := range []string{echov1alpha1.EventReasonRestoreStarted, echov1alpha1.EventReasonRestoreCompleted} {
			Expect(desc).To(MatchRegexp(`(?m)^Events:\n(.*\n)*.*\s` + reason + `\s`))
		}
		Expect(d.run(Default, documented("events", "--for", "echorestore/RESTORE"))).To(ContainSubstring(echov1alpha1.EventReasonRestoreCompleted))
		Expect(d.run(Default, documented("get", "echo", "RESTORED"))).To(MatchRegexp(`(?m)^journal-copy\s+True\s+Available\s+1\s+1\s`))

		// The category lists the four kinds.
		category := d.run(Default, documented("get", "echo-operator"))
		for _, name := range []string{"echo.echo.dev/echo-sample", "echo.echo.dev/journal-copy", "echobackup.echo.dev/journal-1",
			"echobackupschedule.echo.dev/journal-nightly", "echorestore.echo.dev/journal-copy"} {
			Expect(category).To(ContainSubstring(name))
		}
	})

	step("delete backups, and give up deleting an artifact", func(t *testing.T) {
		Expect(d.run(Default, documented("delete", "echobackup", "BACKUP"))).To(ContainSubstring(`echobackup.echo.dev "journal-1" deleted`))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "journal-1"}, &echov1alpha1.EchoBackup{}))).To(BeTrue())

		// Its artifact's delete Job never ends: the EchoBackup stays
		// until its finalizer is removed by hand.
		key := backup(t, "journal-2", echov1alpha1.DeletionPolicyDelete)
		d.values["DELETING"] = key.Name
		Expect(k8sClient.Delete(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
		waitJobNamed(t, ns, "journal-2-delete")
		b := &echov1alpha1.EchoBackup{}
		Expect(k8sClient.Get(ctx, key, b)).To(Succeed())
		Expect(b.DeletionTimestamp).NotTo(BeNil())
		Expect(b.Finalizers).To(ContainElement(echov1alpha1.ArtifactFinalizer))
		Expect(d.run(Default, documented("patch", "echobackup", "DELETING", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`))).
			To(ContainSubstring("echobackup.echo.dev/journal-2 patched"))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key, &echov1alpha1.EchoBackup{}))
		}, timeout, interval).Should(BeTrue())
	})
}

// expectMessageRolledOut waits until the Echo's pods carry message and the
// Echo is Ready for its generation.
func expectMessageRolledOut(t *testing.T, key types.NamespacedName, message string) {
	t.Helper()
	Expect(getEcho(Default, key).Spec.Message).To(Equal(message))
	Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(context.Background(), key, dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: message}))
	}, timeout, interval).Should(Succeed())
	waitReady(t, key, *getEcho(Default, key).Spec.Replicas)
}
