package e2enode

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/echo-operator/echo-operator/test/harness/promserver"
)

// walkthroughDoc is the page of the walk-through, "Walk-through: nightly,
// copied, tested".
const walkthroughDoc = "backup-restore.md"

// checkWalkthrough follows the walk-through of docs/backup-restore.md with
// the persistent sample Echo of ns (journal there), the samples' location
// (primary) and the second MinIO's (offsite), which must be running: the
// schedule's backup, its copy and a restore test of it all succeed and
// `kubectl echo status` says so; with the second MinIO gone, the next
// backup completes and its copy fails, which `kubectl echo status`,
// `kubectl echo logs --copy` and the alert EchoBackupCopyFailed, in a real
// Prometheus scraping the operator's pods, all tell; with it back, the
// failed copy made again on request completes and the alert resolves.
// The restore test
// never touches the source Echo: its journal is still journal.
func checkWalkthrough(t *testing.T, ns, journalPath, journal string) {
	user := docsUser{ns: ns, pluginDir: buildPlugin(t)}
	names := []string{"journal", "echo-sample-persistent"}
	prom := startPrometheus(t)

	kubectlApply(t, ns, docManifest(t, walkthroughDoc, []string{"name: journal-nightly", "copyTo:", "restoreTest:"},
		"echoName: journal", "echoName: echo-sample-persistent", "name: primary", "name: echo-backups"))
	t.Run("a backup, its copy and a restore test succeed", func(t *testing.T) {
		user.run(t, documented("echo", "backup", "journal", "--schedule", "journal-nightly", "--wait").With(names...))
		user.run(t, documented("wait", "echobackup", "-l", "echo.dev/schedule=journal-nightly", "--for=condition=Copied", "--timeout=15m"))
		user.run(t, documented("annotate", "echobackupschedule", "journal-nightly", "echo.dev/restore-test-now=$(date +%s)", "--overwrite").
			With("echo.dev/restore-test-now=$(date +%s)", "echo.dev/restore-test-now="+time.Now().Format("20060102150405")))
		user.run(t, documented("wait", "echobackupschedule", "journal-nightly", "--for=jsonpath={.status.lastRestoreTest.outcome}=Succeeded", "--timeout=15m"))
		status := user.run(t, documented("echo", "status", "journal").With(names...))
		t.Logf("kubectl echo status journal:\n%s", status)
		for _, want := range []string{"Last restore test:     Succeeded (Verified)", "Last backup's copies:  offsite Completed"} {
			if !strings.Contains(status, want) {
				t.Errorf("kubectl echo status does not say %q", want)
			}
		}
		message := kubectl(t, "get", "-n", ns, "echobackupschedule/journal-nightly", "-o", "jsonpath={.status.lastRestoreTest.message}")
		if !strings.Contains(message, "files read back match the backup's manifest") {
			t.Errorf("the restore test's message does not say the data was read back: %s", message)
		}
		restore := strings.TrimSpace(kubectl(t, "get", "-n", ns, "echobackupschedule/journal-nightly", "-o", "jsonpath={.status.lastRestoreTest.restore}"))
		kubectl(t, "wait", "-n", ns, "--for=delete", "echo/echo-sample-persistent-restoretest", "--timeout=300s")
		kubectl(t, "wait", "-n", ns, "--for=delete", "echorestore/"+restore, "--timeout=300s")
		kubectl(t, "wait", "-n", ns, "--for=delete", "pvc/echo-sample-persistent-restoretest-data", "--timeout=300s")
		if got := getThroughPortForward(t, ns, "svc/echo-sample-persistent", journalPath); got != journal {
			t.Fatalf("after the restore test the sample Echo's journal is\n%s\nwant\n%s", got, journal)
		}
	})

	var backup string
	t.Run("the second location breaks", func(t *testing.T) {
		stopOffsiteMinIO(t)
		user.run(t, documented("echo", "backup", "journal", "--schedule", "journal-nightly", "--wait").With(names...))
		backup = strings.TrimSpace(kubectl(t, "get", "-n", ns, "echo/echo-sample-persistent", "-o", "jsonpath={.status.lastSuccessfulBackup.name}"))
		// The Job retries an unreachable store twice.
		awaitCopyPhase(t, ns, backup, "Failed", 5*time.Minute)
		checkFailedCopy(t, ns, backup)
		status := user.run(t, documented("echo", "status", "journal").With(names...))
		t.Logf("kubectl echo status journal:\n%s", status)
		if !strings.Contains(status, "Last backup's copies:  offsite Failed (StorageError)") {
			t.Errorf("kubectl echo status does not show the failed copy")
		}

		// The copy's Job and pods are gone: its mover's account is kept.
		kubectl(t, "wait", "-n", ns, "--for=delete", "job/"+backup+"-copy-offsite", "--timeout=120s")
		logs := user.run(t, documented("echo", "logs", "BACKUP", "--copy", "offsite").With("BACKUP", backup))
		t.Logf("kubectl echo logs %s --copy offsite:\n%s", backup, logs)
		for _, want := range []string{"kept in the status of copy offsite of EchoBackup " + backup, "copy failed", "s3://" + offsiteMinIO.bucket + "/"} {
			if !strings.Contains(logs, want) {
				t.Errorf("kubectl echo logs --copy does not say %q", want)
			}
		}
		awaitFiring(t, prom, "EchoBackupCopyFailed", map[string]string{"namespace": ns, "echo": "echo-sample-persistent", "copy": "offsite"})
	})

	t.Run("the second location is back and the failed copy is made again", func(t *testing.T) {
		if backup == "" {
			t.Skip("no backup with a failed copy")
		}
		startOffsiteMinIO(t)
		user.run(t, documented("annotate", "echobackup", "BACKUP", "echo.dev/retry-copy=offsite").With("BACKUP", backup))
		user.run(t, documented("wait", "echobackup", "BACKUP", "--for=condition=Copied", "--timeout=15m").With("BACKUP", backup))
		status := user.run(t, documented("echo", "status", "journal").With(names...))
		t.Logf("kubectl echo status journal:\n%s", status)
		if !strings.Contains(status, "Last backup's copies:  offsite Completed (Copied)") {
			t.Errorf("kubectl echo status does not show the copy made again")
		}
		if got := backupField(t, ns, backup, "{.metadata.annotations.echo\\.dev/retry-copy}"); got != "" {
			t.Errorf("the request stays on the backup: %q", got)
		}
		awaitResolved(t, prom, "EchoBackupCopyFailed", map[string]string{"namespace": ns, "echo": "echo-sample-persistent", "copy": "offsite"})
	})
}

// stopOffsiteMinIO stops the second MinIO and deletes its Service: a
// Service with no endpoints drops connections here, and each of a copy
// Job's attempts would wait for its dials to time out.
func stopOffsiteMinIO(t *testing.T) {
	t.Helper()
	kubectl(t, "scale", "-n", offsiteMinIO.namespace, "deployment/minio", "--replicas=0")
	kubectl(t, "wait", "-n", offsiteMinIO.namespace, "--for=delete", "pod", "-l", "app=minio", "--timeout=120s")
	kubectl(t, "delete", "-n", offsiteMinIO.namespace, "service/minio", "--wait=true")
}

// startOffsiteMinIO starts the second MinIO stopped by stopOffsiteMinIO
// again, behind a new Service, with its bucket made again on its empty
// data directory.
func startOffsiteMinIO(t *testing.T) {
	t.Helper()
	kubectl(t, "scale", "-n", offsiteMinIO.namespace, "deployment/minio", "--replicas=1")
	if err := k8sClient.Create(context.Background(), minioService(offsiteMinIO)); err != nil {
		t.Fatalf("creating the Service of the second MinIO: %v", err)
	}
	makeMinIOBucket(t, offsiteMinIO)
}

// checkFailedCopy checks what a backup whose copy offsite could not reach
// its store says: it completed, the copy failed with StorageError naming
// the store, Copied is False, and a Warning Event tells it.
func checkFailedCopy(t *testing.T, ns, backup string) {
	t.Helper()
	if complete := backupField(t, ns, backup, `{.status.conditions[?(@.type=="Complete")].status}`); complete != "True" {
		t.Errorf("the backup's Complete condition is %q after its copy failed", complete)
	}
	reason := backupField(t, ns, backup, "{.status.copies[0].reason}")
	message := backupField(t, ns, backup, "{.status.copies[0].message}")
	endpoint := "http://minio." + offsiteMinIO.namespace + ".svc:9000"
	if reason != "StorageError" || !strings.Contains(message, "s3://"+offsiteMinIO.bucket+"/") || !strings.Contains(message, endpoint) {
		t.Errorf("the failed copy says %s: %q; want StorageError naming s3://%s at %s", reason, message, offsiteMinIO.bucket, endpoint)
	}
	copied := backupField(t, ns, backup, `{.status.conditions[?(@.type=="Copied")].status} {.status.conditions[?(@.type=="Copied")].reason}`)
	if copied != "False CopyFailed" {
		t.Errorf("the Copied condition is %q, want False CopyFailed", copied)
	}
	events := kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+backup+",reason=CopyFailed",
		"-o", `jsonpath={range .items[*]}{.type}: {.message}{"\n"}{end}`)
	if !strings.Contains(events, "Warning: Copy offsite failed (StorageError)") {
		t.Errorf("the CopyFailed Events of the backup:\n%s", events)
	}
}

// awaitFiring waits until Prometheus fires the alert name whose labels
// include labels.
func awaitFiring(t *testing.T, prom *promserver.Server, name string, labels map[string]string) {
	t.Helper()
	awaitAlert(t, prom, name, labels, true)
}

// awaitResolved waits until Prometheus holds no alert name, firing or
// pending, whose labels include labels.
func awaitResolved(t *testing.T, prom *promserver.Server, name string, labels map[string]string) {
	t.Helper()
	awaitAlert(t, prom, name, labels, false)
}

// awaitAlert waits until the alert name with labels fires, or until
// Prometheus holds it no more.
func awaitAlert(t *testing.T, prom *promserver.Server, name string, labels map[string]string, firing bool) {
	t.Helper()
	var seen []promserver.Alert
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		alerts, err := prom.Alerts()
		if err != nil {
			return false, nil
		}
		seen = alerts
		held := false
		for _, a := range alerts {
			if a.Labels["alertname"] != name || !hasLabels(a.Labels, labels) {
				continue
			}
			if firing && a.State == "firing" {
				t.Logf("%s fires: %s", name, a.Annotations["summary"])
				return true, nil
			}
			held = true
		}
		return !firing && !held, nil
	})
	if err != nil {
		t.Fatalf("%s with %v: firing=%v not reached; Prometheus holds %+v", name, labels, firing, seen)
	}
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
