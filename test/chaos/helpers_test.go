//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/echoserver"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

const (
	// convergeTimeout is how long the operator has to converge after a
	// restart.
	convergeTimeout = 2 * time.Minute
	// setupTimeout bounds a scenario's preparation and its action.
	setupTimeout = 3 * time.Minute
	pollInterval = 200 * time.Millisecond
	bucketName   = "echo-backups"
	bucketPrefix = "chaos"
)

// s3Env is the suite's S3 service and the bucket the backups go to.
type s3Env struct {
	server *s3server.Server
	client *minio.Client
	bucket string
	prefix string
}

// startS3 starts the S3 service for the test and gives this process its
// credentials, for the data mover code that verifies artifacts.
func startS3(t *testing.T) *s3Env {
	t.Helper()
	srv := s3server.Start(t, bucketName)
	for _, kv := range srv.Env() {
		name, value, _ := strings.Cut(kv, "=")
		if err := os.Setenv(name, value); err != nil {
			t.Fatal(err)
		}
	}
	return &s3Env{server: srv, client: srv.Client(t), bucket: bucketName, prefix: bucketPrefix}
}

func (e *s3Env) storage() echov1alpha1.BackupStorage { return e.server.Storage(e.bucket, e.prefix) }

func (e *s3Env) store() (backupstore.Store, error) {
	store, err := backupstore.NewS3Store(backupstore.S3Config{
		Endpoint: e.server.Endpoint, Region: s3server.Region, Bucket: e.bucket, Prefix: e.prefix, PathStyle: true,
	})
	if err != nil {
		return nil, fmt.Errorf("opening the bucket: %w", err)
	}
	return store, nil
}

// newNamespace creates a namespace of the suite that enforces the
// restricted Pod Security Standard, with the S3 credentials in it, and
// removes it when the test ends.
func newNamespace(t *testing.T, env *s3Env, what string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: namespacePrefix + what + "-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNamespace(ns.Name) })
	if err := k8sClient.Create(ctx, env.server.CredentialsSecret(ns.Name)); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// removeNamespace deletes a namespace after its manager stopped: the
// operator's finalizers are dropped, as nobody is left to act on them.
func removeNamespace(name string) {
	ctx := context.Background()
	lists := []client.ObjectList{&echov1alpha1.EchoList{}, &echov1alpha1.EchoBackupList{}, &echov1alpha1.EchoRestoreList{}}
	for _, list := range lists {
		if err := k8sClient.List(ctx, list, client.InNamespace(name)); err != nil {
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			continue
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok || len(obj.GetFinalizers()) == 0 {
				continue
			}
			patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
			obj.SetFinalizers(nil)
			_ = k8sClient.Patch(ctx, obj, patch)
		}
	}
	_ = k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// await polls cond until it holds (returns nil) or ctx ends, and then
// returns cond's last error.
func await(ctx context.Context, cond func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		return errors.Join(err, last)
	}
	return nil
}

// updateEcho changes an Echo, retrying on conflicts.
func updateEcho(ctx context.Context, key types.NamespacedName, mutate func(*echov1alpha1.Echo)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		e := &echov1alpha1.Echo{}
		if err := k8sClient.Get(ctx, key, e); err != nil {
			return err
		}
		mutate(e)
		return k8sClient.Update(ctx, e)
	})
}

// writeJournal has a real echo server journal n requests into a claim's
// directory, under the instance name, and returns the claim's files.
func writeJournal(namespace, claim, instance string, n int) (map[string][]byte, error) {
	dir := claimDir(namespace, claim)
	srv, err := echoserver.New(echoserver.Config{Message: "chaos", Instance: instance, DataDir: dir})
	if err != nil {
		return nil, fmt.Errorf("starting an echo server on %s: %w", dir, err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	for i := range n {
		resp, err := http.Post(fmt.Sprintf("%s/items/%d", web.URL, i), "text/plain", strings.NewReader(fmt.Sprintf("entry %d of %s", i, instance)))
		if err != nil {
			return nil, fmt.Errorf("journaling a request: %w", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("journaling a request: %s", resp.Status)
		}
	}
	web.Close()
	if err := srv.Close(); err != nil {
		return nil, fmt.Errorf("stopping the echo server: %w", err)
	}
	return readData(dir)
}

// logTail is the end of a file, for failure reports.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// logPath is where the manager of a namespace logs.
func logPath(ns string) string { return filepath.Join(workDir, "logs", ns+".log") }
