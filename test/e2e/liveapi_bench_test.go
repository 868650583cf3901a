//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	echochart "github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/datamover"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// liveBenchItems is how many revisions and stored backups the live API
// lists in BenchmarkLiveAPIListings.
const liveBenchItems = 1000

// BenchmarkLiveAPIListings measures listings of 1,000 EchoRevisions and of
// 1,000 StoredBackups through kube-apiserver's aggregation layer, served by
// the real manager: the time of each listing, the size of the response
// (JSON, as client-go reads it, and the table kubectl asks for) and the
// manager's resident memory before, after the first listing and at the
// end (make bench-live; results in docs/benchmarks.md).
//
// The revisions are release records signed with the operator's key, as it
// writes them (3 revisions of 334 releases, with a 4 KiB manifest each);
// the backups are written to a real S3 server by the data mover.
func BenchmarkLiveAPIListings(b *testing.B) {
	RegisterTestingT(b)
	registerLiveAPI(b)
	ctx := context.Background()
	ns := "bench-live"
	Expect(createNamespace(ctx, ns, nil)).To(Succeed())

	b.Run("echorevisions", func(b *testing.B) {
		RegisterTestingT(b)
		rssBefore := managerRSS()
		writeSignedReleaseRecords(ns, liveBenchItems)
		// The cache holds every record once the list shows them all.
		path := "/apis/live.echo.dev/v1alpha1/namespaces/" + ns + "/echorevisions"
		Eventually(func(g Gomega) int { return countItems(g, path) }, timeout, interval).Should(Equal(liveBenchItems))
		measureListings(b, path, rssBefore, 0)
	})

	b.Run("storedbackups", func(b *testing.B) {
		RegisterTestingT(b)
		s3 := s3server.StartAt(b, storageHost, "echo-backups")
		storage := s3.Storage("echo-backups", "bench")
		writeBackups(b, s3, *storage.S3, liveBenchItems)
		Expect(k8sClient.Create(ctx, s3.CredentialsSecret(ns))).To(Succeed())
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
			Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *storage.S3},
		})).To(Succeed())
		rssBefore := managerRSS()
		// The location reaches the manager's cache before the first
		// measured listing, which is then a cold one: every manifest read.
		path := "/apis/live.echo.dev/v1alpha1/namespaces/" + ns + "/storedbackups"
		measureListings(b, path, rssBefore, 16*time.Second)
	})
}

// measureListings lists path: cold (first), warm (again at once), and,
// when ttl is set, once more after it (the storage listed again, the
// manifests remembered); then as a table. It reports each time, the
// response sizes and the manager's memory.
func measureListings(b *testing.B, path string, rssBefore int64, ttl time.Duration) {
	rc := clientset.CoreV1().RESTClient()
	list := func(accept string) (time.Duration, int) {
		start := time.Now()
		req := rc.Get().AbsPath(path)
		if accept != "" {
			req = req.SetHeader("Accept", accept)
		}
		raw, err := req.DoRaw(context.Background())
		Expect(err).NotTo(HaveOccurred())
		return time.Since(start), len(raw)
	}
	cold, jsonBytes := list("")
	rssAfter := managerRSS()
	warm, _ := list("")
	b.ReportMetric(cold.Seconds(), "cold-s")
	b.ReportMetric(warm.Seconds(), "warm-s")
	if ttl > 0 {
		time.Sleep(ttl) // the listing's cache lifetime: what is measured is the next read of the storage
		relisted, _ := list("")
		b.ReportMetric(relisted.Seconds(), "relisted-s")
	}
	table, tableBytes := list("application/json;as=Table;v=v1;g=meta.k8s.io")
	b.ReportMetric(table.Seconds(), "table-s")
	b.ReportMetric(float64(jsonBytes), "json-bytes")
	b.ReportMetric(float64(tableBytes), "table-bytes")
	b.ReportMetric(float64(rssAfter-rssBefore)/(1<<20), "rss-delta-MiB")
	b.ReportMetric(float64(managerRSS())/(1<<20), "rss-MiB")
	b.Logf("%s: cold %s, warm %s, table %s; %d bytes as JSON, %d as a table; manager RSS %d MiB before, %d MiB after the first listing",
		path, cold.Round(time.Millisecond), warm.Round(time.Millisecond), table.Round(time.Millisecond), jsonBytes, tableBytes, rssBefore>>20, rssAfter>>20)
}

func countItems(g Gomega, path string) int {
	raw, err := clientset.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	g.Expect(json.Unmarshal(raw, &list)).To(Succeed())
	return len(list.Items)
}

// managerRSS is the manager process's resident set size in bytes.
func managerRSS() int64 { return managerMemory("VmRSS") }

// managerMemory is a size the manager process's /proc/PID/status gives in
// kB (VmRSS, VmHWM), in bytes.
func managerMemory(field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", op.pid()))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	panic("no " + field + " in /proc/<manager>/status")
}

// writeSignedReleaseRecords writes n release records as the operator
// writes them, signed with its key: three revisions per release.
func writeSignedReleaseRecords(ns string, n int) {
	signer, err := releasetrust.LoadOrCreateSigner(context.Background(), k8sClient, operatorNamespace)
	Expect(err).NotTo(HaveOccurred())
	manifest := strings.Repeat("# a rendered object of the echo chart\n", 4096/38)
	for i := range n {
		name, version := fmt.Sprintf("bench-%04d", i/3), i%3+1
		status := release.StatusSuperseded
		if version == 3 {
			status = release.StatusDeployed
		}
		rel := &release.Release{
			Name: name, Namespace: ns, Version: version, Manifest: manifest,
			Info: &release.Info{Status: status, Description: "Upgrade complete",
				FirstDeployed: helmtime.Now(), LastDeployed: helmtime.Now()},
			Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "echo", Version: "0.1.0", AppVersion: "0.1.0"}},
			Config: map[string]any{"message": "bench"},
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version),
				Labels: map[string]string{
					echochart.ReleaseOwnerLabel: echochart.ReleaseOwner, echochart.ReleaseNameLabel: name,
					echochart.ReleaseStatusLabel: string(status), echochart.ReleaseVersionLabel: strconv.Itoa(version),
				},
			},
			Type: echochart.ReleaseSecretType,
			Data: map[string][]byte{releasetrust.ReleaseDataKey: encodeRelease(rel)},
		}
		signer.Sign(s)
		Expect(k8sClient.Create(context.Background(), s)).To(Succeed())
	}
}

// writeBackups writes n backups of a one-file data directory to the
// bucket of loc with the data mover, under keys of the operator's layout.
func writeBackups(b *testing.B, s3 *s3server.Server, loc echov1alpha1.S3Storage, n int) {
	store, err := backupstore.NewS3StoreWithCredentials(backupstore.S3Config{
		Endpoint: loc.Endpoint, Region: loc.Region, Bucket: loc.Bucket, Prefix: loc.Prefix, PathStyle: loc.ForcePathStyle,
	}, s3.AccessKey, s3.SecretKey)
	Expect(err).NotTo(HaveOccurred())
	data := b.TempDir()
	Expect(os.WriteFile(data+"/journal.jsonl", []byte(strings.Repeat("an entry\n", 100)), 0o600)).To(Succeed())
	for i := range n {
		_, err := datamover.Backup(context.Background(), datamover.BackupOptions{
			DataDir: data, Store: store, Key: fmt.Sprintf("bench-src/web/b-%04d", i),
			Config: json.RawMessage(`{}`), Source: backupstore.Source{Namespace: "bench-src", Name: "web"},
		})
		Expect(err).NotTo(HaveOccurred())
	}
}
