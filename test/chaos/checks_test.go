//go:build linux

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/datamover"
)

// The convergence checks. Each returns nil once what it checks holds, or
// an error saying what does not yet; the suite polls them.

// echoReady checks that an Echo is Ready for its current generation, holds
// no restore, and that its release is deployed with nothing left pending.
func echoReady(ctx context.Context, key types.NamespacedName) error {
	e := &echov1alpha1.Echo{}
	if err := k8sClient.Get(ctx, key, e); err != nil {
		return fmt.Errorf("echo %s: %w", key, err)
	}
	c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReady)
	switch {
	case c == nil:
		return fmt.Errorf("echo %s reports no Ready condition", key)
	case c.Status != metav1.ConditionTrue:
		return fmt.Errorf("echo %s not Ready: %s: %s", key, c.Reason, c.Message)
	case e.Status.ObservedGeneration != e.Generation:
		return fmt.Errorf("echo %s Ready for generation %d, not %d", key, e.Status.ObservedGeneration, e.Generation)
	case e.Annotations[echov1alpha1.RestoreAnnotation] != "":
		return fmt.Errorf("echo %s still held by restore %s", key, e.Annotations[echov1alpha1.RestoreAnnotation])
	}
	return releaseDeployed(ctx, key)
}

// releaseDeployed checks an Echo's stored release history: no revision
// pending, and the latest deployed.
func releaseDeployed(ctx context.Context, key types.NamespacedName) error {
	records, err := releaseRecords(ctx, key)
	if err != nil {
		return err
	}
	if len(records) == 0 {
		return fmt.Errorf("echo %s has no release record", key)
	}
	for _, s := range records {
		if strings.HasPrefix(s.Labels[chart.ReleaseStatusLabel], "pending") {
			return fmt.Errorf("release record %s/%s left %s", key.Namespace, s.Name, s.Labels[chart.ReleaseStatusLabel])
		}
	}
	latest := records[len(records)-1]
	if status := latest.Labels[chart.ReleaseStatusLabel]; status != "deployed" {
		return fmt.Errorf("latest release record %s/%s is %s", key.Namespace, latest.Name, status)
	}
	return nil
}

// releaseRecords lists an Echo's release Secrets, oldest revision first.
func releaseRecords(ctx context.Context, key types.NamespacedName) ([]corev1.Secret, error) {
	secrets := &corev1.SecretList{}
	if err := k8sClient.List(ctx, secrets, client.InNamespace(key.Namespace),
		client.MatchingLabels(chart.ReleaseRecordLabels(chart.ReleaseName(key.Name)))); err != nil {
		return nil, fmt.Errorf("listing the release records of %s: %w", key, err)
	}
	sort.Slice(secrets.Items, func(i, j int) bool {
		return revision(secrets.Items[i]) < revision(secrets.Items[j])
	})
	return secrets.Items, nil
}

func revision(s corev1.Secret) int {
	var n int
	_, _ = fmt.Sscanf(s.Labels["version"], "%d", &n)
	return n
}

// echoGone checks that an Echo and everything its release made are gone.
func echoGone(ctx context.Context, key types.NamespacedName) error {
	claim := types.NamespacedName{Namespace: key.Namespace, Name: chart.DataClaimName(key.Name)}
	for _, o := range []struct {
		key types.NamespacedName
		obj client.Object
	}{{key, &echov1alpha1.Echo{}}, {key, &appsv1.Deployment{}}, {claim, &corev1.PersistentVolumeClaim{}}} {
		err := k8sClient.Get(ctx, o.key, o.obj)
		if err == nil {
			return fmt.Errorf("%T %s still there", o.obj, o.key)
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("%T %s: %w", o.obj, o.key, err)
		}
	}
	records, err := releaseRecords(ctx, key)
	if err != nil {
		return err
	}
	if len(records) > 0 {
		return fmt.Errorf("echo %s left %d release records", key, len(records))
	}
	return nil
}

// backupComplete returns a backup once it is Complete; a failed backup is
// an error.
func backupComplete(ctx context.Context, key types.NamespacedName) (*echov1alpha1.EchoBackup, error) {
	b := &echov1alpha1.EchoBackup{}
	if err := k8sClient.Get(ctx, key, b); err != nil {
		return nil, fmt.Errorf("echobackup %s: %w", key, err)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		return nil, fmt.Errorf("echobackup %s failed: %s: %s", key, c.Reason, b.Status.Error)
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete) {
		return nil, fmt.Errorf("echobackup %s not complete yet", key)
	}
	return b, nil
}

// restoreComplete returns a restore once it is Complete.
func restoreComplete(ctx context.Context, key types.NamespacedName) (*echov1alpha1.EchoRestore, error) {
	rs := &echov1alpha1.EchoRestore{}
	if err := k8sClient.Get(ctx, key, rs); err != nil {
		return nil, fmt.Errorf("echorestore %s: %w", key, err)
	}
	if c := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		return nil, fmt.Errorf("echorestore %s failed: %s: %s", key, c.Reason, rs.Status.Error)
	}
	if !meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete) {
		return nil, fmt.Errorf("echorestore %s not complete yet", key)
	}
	return rs, nil
}

// artifactKey is where a backup's artifact lives under the storage's
// prefix (docs/backup-restore.md).
func artifactKey(b *echov1alpha1.EchoBackup) string {
	return path.Join(b.Namespace, b.Spec.EchoName, b.Name)
}

// artifactHolds reads a backup's artifact from the bucket and restores it
// with the data mover's own code, which verifies the manifest's checksums
// of every file and of the archive, then compares the files with want.
func artifactHolds(ctx context.Context, env *s3Env, b *echov1alpha1.EchoBackup, want map[string][]byte) error {
	store, err := env.store()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(workDir, "verify-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	target := filepath.Join(dir, "data")
	if _, err := datamover.Restore(ctx, datamover.RestoreOptions{DataDir: target, Store: store, Key: artifactKey(b)}); err != nil {
		return fmt.Errorf("the artifact of %s/%s does not verify: %w", b.Namespace, b.Name, err)
	}
	got, err := readData(target)
	if err != nil {
		return err
	}
	if err := sameData(got, want); err != nil {
		return fmt.Errorf("the artifact of %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// readData reads the files of a data directory by relative path, leaving
// out what the data mover keeps there for itself (.echo-*: staging
// directories, data moved aside by a restore).
func readData(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".echo-") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	return files, nil
}

// sameData compares two data directories' files byte for byte.
func sameData(got, want map[string][]byte) error {
	if len(want) == 0 {
		return errors.New("no source data to compare with")
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			return fmt.Errorf("file %s missing", name)
		}
		if !bytes.Equal(g, w) {
			return fmt.Errorf("file %s differs (%d bytes, want %d)", name, len(g), len(w))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			return fmt.Errorf("unexpected file %s", name)
		}
	}
	return nil
}

// claimHolds compares the files of a claim's directory with want.
func claimHolds(namespace, claim string, want map[string][]byte) error {
	got, err := readData(claimDir(namespace, claim))
	if err != nil {
		return err
	}
	if err := sameData(got, want); err != nil {
		return fmt.Errorf("claim %s/%s: %w", namespace, claim, err)
	}
	return nil
}

// namespaceClean checks what must not be left behind in a namespace once
// everything settled: no Job, no object stuck being deleted, no restore
// hold, no backup or restore failed or carrying a finalizer it no longer
// needs, no failed mover run, and in the bucket no artifact without its
// EchoBackup and no unfinished upload.
func namespaceClean(ctx context.Context, env *s3Env, ns string) error {
	checks := []func(context.Context, *s3Env, string) error{
		noJobs, echoesClean, backupsClean, restoresClean, noMoverFailures, bucketClean,
	}
	for _, check := range checks {
		if err := check(ctx, env, ns); err != nil {
			return err
		}
	}
	return nil
}

func noJobs(ctx context.Context, _ *s3Env, ns string) error {
	jobs := &batchv1.JobList{}
	if err := k8sClient.List(ctx, jobs, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing Jobs: %w", err)
	}
	if len(jobs.Items) > 0 {
		return fmt.Errorf("job %s/%s left behind", ns, jobs.Items[0].Name)
	}
	return nil
}

func echoesClean(ctx context.Context, _ *s3Env, ns string) error {
	echoes := &echov1alpha1.EchoList{}
	if err := k8sClient.List(ctx, echoes, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing Echoes: %w", err)
	}
	for _, e := range echoes.Items {
		if !e.DeletionTimestamp.IsZero() {
			return fmt.Errorf("echo %s/%s stuck deleting, finalizers %v", ns, e.Name, e.Finalizers)
		}
		if hold := e.Annotations[echov1alpha1.RestoreAnnotation]; hold != "" {
			return fmt.Errorf("echo %s/%s still held by restore %s", ns, e.Name, hold)
		}
	}
	return nil
}

func backupsClean(ctx context.Context, _ *s3Env, ns string) error {
	backups := &echov1alpha1.EchoBackupList{}
	if err := k8sClient.List(ctx, backups, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing EchoBackups: %w", err)
	}
	for _, b := range backups.Items {
		if !b.DeletionTimestamp.IsZero() {
			return fmt.Errorf("echobackup %s/%s stuck deleting, finalizers %v", ns, b.Name, b.Finalizers)
		}
		if _, err := backupComplete(ctx, client.ObjectKeyFromObject(&b)); err != nil {
			return err
		}
		var want []string
		if b.Spec.DeletionPolicy == echov1alpha1.DeletionPolicyDelete {
			want = []string{echov1alpha1.ArtifactFinalizer}
		}
		if fmt.Sprint(b.Finalizers) != fmt.Sprint(want) {
			return fmt.Errorf("echobackup %s/%s has finalizers %v, want %v", ns, b.Name, b.Finalizers, want)
		}
	}
	return nil
}

func restoresClean(ctx context.Context, _ *s3Env, ns string) error {
	restores := &echov1alpha1.EchoRestoreList{}
	if err := k8sClient.List(ctx, restores, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing EchoRestores: %w", err)
	}
	for _, rs := range restores.Items {
		if _, err := restoreComplete(ctx, client.ObjectKeyFromObject(&rs)); err != nil {
			return err
		}
		if len(rs.Finalizers) > 0 {
			return fmt.Errorf("finished echorestore %s/%s keeps finalizers %v", ns, rs.Name, rs.Finalizers)
		}
	}
	return nil
}

func noMoverFailures(_ context.Context, _ *s3Env, ns string) error {
	if failed := movers.failuresIn(ns); len(failed) > 0 {
		return fmt.Errorf("data mover runs failed: %s", strings.Join(failed, "; "))
	}
	return nil
}

// bucketClean checks the namespace's part of the bucket: every artifact
// belongs to an EchoBackup that is there (a final backup's EchoBackup
// outlives its Echo, so the rule holds for it too), and no multipart
// upload is left open.
func bucketClean(ctx context.Context, env *s3Env, ns string) error {
	prefix := env.prefix + "/" + ns + "/"
	for obj := range env.client.ListObjects(ctx, env.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return fmt.Errorf("listing the bucket: %w", obj.Err)
		}
		parts := strings.Split(strings.TrimPrefix(obj.Key, prefix), "/")
		if len(parts) < 3 {
			return fmt.Errorf("object %s outside any backup's key", obj.Key)
		}
		b := &echov1alpha1.EchoBackup{}
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: parts[1]}, b); err != nil {
			return fmt.Errorf("object %s: its EchoBackup: %w", obj.Key, err)
		}
		if b.Spec.EchoName != parts[0] {
			return fmt.Errorf("object %s is not under the key of EchoBackup %s", obj.Key, b.Name)
		}
	}
	var open []string
	for up := range env.client.ListIncompleteUploads(ctx, env.bucket, prefix, true) {
		if up.Err != nil {
			return fmt.Errorf("listing unfinished uploads: %w", up.Err)
		}
		open = append(open, up.Key)
	}
	if len(open) > 0 {
		return fmt.Errorf("multipart uploads left open: %v", open)
	}
	return nil
}
