package e2enode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
)

// TestFailedBackupLogOutlivesItsJob: a backup to MinIO with a wrong secret
// fails; once its Job and pods are gone, `kubectl echo logs NAME` prints
// the data mover's own account of the failure, kept in the backup's status,
// and not the secret.
func TestFailedBackupLogOutlivesItsJob(t *testing.T) {
	ensureMinIO(t)
	ns := restrictedNamespace(t, "logs")
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(repoRoot, "config", "samples", "echo_v1alpha1_echo.yaml"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/echo-sample", "--timeout=180s")
	const wrongSecret = "not-the-minio-password-5f0c"
	kubectl(t, "create", "secret", "generic", "wrong-credentials", "-n", ns,
		"--from-literal=AWS_ACCESS_KEY_ID="+minioUser, "--from-literal=AWS_SECRET_ACCESS_KEY="+wrongSecret)
	kubectl(t, "label", "secret", "wrong-credentials", "-n", ns, "echo.dev/storage-credentials=true")
	kubectlApply(t, ns, wrongCredentialsBackupYAML)
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Failed", "echobackup/denied", "--timeout=300s")
	kubectl(t, "wait", "-n", ns, "--for=delete", "job/denied-backup", "--timeout=120s")
	if pods := kubectl(t, "get", "pods", "-n", ns, "-l", "echo.dev/backup=denied", "-o", "name"); strings.TrimSpace(pods) != "" {
		t.Logf("pods of the Job still going: %s", pods)
	}

	plugin := clusteruser.Kubectl{Bin: kubectlBin, Kubeconfig: cluster.KubeconfigPath(),
		Env: []string{"PATH=" + buildPlugin(t) + string(os.PathListSeparator) + os.Getenv("PATH")}}
	out, err := plugin.RunIn("", "echo", "logs", "denied", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl echo logs: %v\n%s", err, out)
	}
	t.Logf("kubectl echo logs denied:\n%s", out)
	// The bucket's name holds the access key ID here, which the mover
	// blanks out wherever it appears: the endpoint names the store.
	for _, want := range []string{"kept in the status of EchoBackup denied", "connecting to the store", "endpoint=http://minio.minio.svc:9000",
		"backup failed", "reason=AccessDenied"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl echo logs does not say %q", want)
		}
	}
	if strings.Contains(out, wrongSecret) {
		t.Error("kubectl echo logs reveals the secret")
	}
}

// ensureMinIO runs the in-cluster MinIO of the samples unless a test
// before has.
func ensureMinIO(t *testing.T) {
	t.Helper()
	if _, err := kubectlErr("get", "namespace", minioNamespace); err == nil {
		return
	}
	runMinIO(t)
}

// buildPlugin builds kubectl-echo into a directory of its own and returns
// the directory, for kubectl to find it on the PATH.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-echo"), "./cmd/kubectl-echo")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-echo: %v\n%s", err, out)
	}
	return dir
}

// wrongCredentialsBackupYAML backs up the sample Echo to the samples' MinIO
// with a Secret whose secret key MinIO refuses.
const wrongCredentialsBackupYAML = `apiVersion: echo.dev/v1alpha1
kind: EchoBackup
metadata:
  name: denied
spec:
  echoName: echo-sample
  storage:
    s3:
      endpoint: http://minio.minio.svc:9000
      bucket: echo-backups
      forcePathStyle: true
      credentialsSecretRef:
        name: wrong-credentials
`
