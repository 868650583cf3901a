package e2enode

import (
	"strings"
	"testing"
)

// restoreTestScheduleYAML backs up the persistent sample Echo to MinIO
// never by itself (the next 29 February is years away: its backup is
// asked for with echo.dev/backup-now) and tests a restore of its newest
// backup every minute.
const restoreTestScheduleYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoBackupSchedule
metadata:
  name: tested
spec:
  schedule: "0 0 29 2 *"
  restoreTest:
    schedule: "@every 1m"
    timeout: 10m
  template:
    echoName: echo-sample-persistent
    storage:
      s3:
        endpoint: http://minio.minio.svc:9000
        bucket: echo-backups
        prefix: restore-tests
        forcePathStyle: true
        credentialsSecretRef:
          name: s3-credentials
`

// checkRestoreTest runs a schedule's restore test against the persistent
// sample Echo with real pods: the schedule's backup is restored into the
// scratch Echo, whose mover reads the data back from its claim, the
// scratch Echo becomes Ready, the result is recorded on the schedule and
// the Echo, and the scratch Echo goes; the sample Echo still serves its
// journal.
func checkRestoreTest(t *testing.T, ns, journalPath, journal string) {
	t.Helper()
	kubectlApply(t, ns, restoreTestScheduleYAML)
	kubectl(t, "annotate", "-n", ns, "echobackupschedule/tested", "echo.dev/backup-now=1")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.lastSuccessfulBackup}", "echobackupschedule/tested", "--timeout=300s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.lastRestoreTest.outcome}=Succeeded", "echobackupschedule/tested", "--timeout=600s")
	// No further test starts while this one's clean-up is checked.
	kubectl(t, "patch", "-n", ns, "echobackupschedule/tested", "--type=merge", "-p", `{"spec":{"restoreTest":{"suspend":true}}}`)

	message := kubectl(t, "get", "-n", ns, "echobackupschedule/tested", "-o", "jsonpath={.status.lastRestoreTest.message}")
	if !strings.Contains(message, "files read back match the backup's manifest") {
		t.Errorf("the restore test's message does not say the data was read back: %s", message)
	}
	restore := strings.TrimSpace(kubectl(t, "get", "-n", ns, "echobackupschedule/tested", "-o", "jsonpath={.status.lastRestoreTest.restore}"))
	kubectl(t, "wait", "-n", ns, "--for=delete", "echo/echo-sample-persistent-restoretest", "--timeout=300s")
	kubectl(t, "wait", "-n", ns, "--for=delete", "echorestore/"+restore, "--timeout=300s")
	kubectl(t, "wait", "-n", ns, "--for=delete", "pvc/echo-sample-persistent-restoretest-data", "--timeout=300s")
	outcome := kubectl(t, "get", "-n", ns, "echo/echo-sample-persistent", "-o", "jsonpath={.status.lastRestoreTest.outcome}")
	if outcome != "Succeeded" {
		t.Errorf("the Echo reports its last restore test as %q, want Succeeded", outcome)
	}
	if got := getThroughPortForward(t, ns, "svc/echo-sample-persistent", journalPath); got != journal {
		t.Fatalf("after the restore test the sample Echo's journal is\n%s\nwant\n%s", got, journal)
	}
}
