//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/datamover"
	"github.com/echo-operator/echo-operator/test/harness/fakes3"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// listingRSSBound is how much the operator's resident memory may grow
// while it lists a hostile tenant's storage (docs/live-api.md states the
// bound the listing limits give by construction, and what was measured).
const listingRSSBound = 128 << 20

// hostileBuckets are the buckets of a storage a tenant controls, each
// answering a listing in its own hostile way.
var hostileBuckets = map[string]fakes3.Bucket{
	// Truncated pages of a thousand keys, forever.
	"endless": fakes3.EndlessPages(1000),
	// One page of a gigabyte of keys.
	"many-keys": fakes3.HugePage(1 << 30),
	// One page of a gigabyte about one object.
	"bloated": fakes3.BloatedPage(1 << 30),
	// A hundred manifests of 256 MiB whose summaries come after their files.
	"huge-manifests": fakes3.HugeManifests(100, 256<<20),
	// No answer until the client gives up.
	"slow": fakes3.Slow(),
}

// TestHostileTenantStorageListings plays a tenant that points
// EchoBackupLocations at a storage it runs itself, on the loopback address
// the manager's egress policy allows (as if on the public internet), that
// answers listings with endless pages, huge pages, huge manifests, or
// not at all. While the operator lists it, its memory stays within
// listingRSSBound, it stays up, another namespace's location lists
// normally and at once, and `kubectl get storedbackups -A` lists that
// location with a warning for each of the tenant's it could not read.
func TestHostileTenantStorageListings(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	installUserRoles(t)

	bystander, backup := bystanderWithABackup(t)
	tn := newTenant(t)
	// The manager's egress policy allows this loopback address alone.
	storage := fakes3.StartAt(t, storageHost)
	Expect(tn.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "own-storage", Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "tenant", "AWS_SECRET_ACCESS_KEY": "tenant-secret"},
	})).To(Succeed())
	for bucket, behaviour := range hostileBuckets {
		storage.Add(bucket, behaviour)
		Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: bucket},
			Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
				Endpoint: storage.Endpoint, Bucket: bucket, Prefix: "backups", ForcePathStyle: true,
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "own-storage"},
			}},
		})).To(Succeed(), bucket)
	}
	pid := op.pid()
	precise := resetPeakRSS()
	rssBefore, peakBefore := managerRSS()>>10, peakRSS(Default)

	tenantKubectl := func(location string) *docsKubectl {
		return &docsKubectl{ns: tn.ns, values: map[string]string{"LOCATION": location}}
	}
	// The operator's cache has the tenant's locations once one lists.
	Eventually(func(g Gomega) {
		out := tenantKubectl("huge-manifests").run(g, documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION", "-o", "wide"))
		g.Expect(strings.Count(out, "huge-manifests."+fakes3.BackupNamespace)).To(Equal(100), out)
	}, timeout, interval).Should(Succeed())

	// Each check fails on its own; those after them run as the parent
	// test.
	run := func(name string, check func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			RegisterTestingT(t)
			check(t)
		})
		RegisterTestingT(t)
	}
	var all string
	run("the other namespace lists at once while the tenant's storage holds a list", func(t *testing.T) {
		everywhere := (&docsKubectl{ns: bystander}).start(t, documented("get", "storedbackups", "-A"))
		own := (&docsKubectl{ns: bystander}).run(Default, documented("get", "storedbackups"))
		Expect(own).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(backup) + `\s+` + regexp.QuoteMeta(bystander) + `/web\s+\S+\s+1\s+true\s+\S+$`))
		Expect(own).NotTo(ContainSubstring("Warning"))
		Expect(everywhere.done).NotTo(BeClosed(), "the list across namespaces, which waits for the storage that does not answer, ended first:\n%s", everywhere.output())
		all = everywhere.exit()
	})

	run("the list across namespaces shows the readable locations and warns of the others", func(*testing.T) {
		Expect(all).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(bystander) + `\s+` + regexp.QuoteMeta(backup) + `\s+` + regexp.QuoteMeta(bystander) + `/web\s+`))
		Expect(all).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(tn.ns) + `\s+huge-manifests\.team\.web\.b-0000000\s+team/web\s+\S+\s+0\s+false\s+`))
		Expect(all).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(tn.ns) + `\s+endless\.team\.web\.b-0000000\s+`))
		for _, bad := range []string{"slow", "many-keys", "bloated", "endless"} {
			Expect(all).To(ContainSubstring("Warning: EchoBackupLocation "+tn.ns+"/"+bad+": "), bad)
		}
		Expect(all).To(ContainSubstring("Warning: EchoBackupLocation " + tn.ns + "/endless: its storage holds more than a listing reads (20000 objects, 100 pages)"))
	})

	run("a list of one of the tenant's locations says what is wrong with it", func(*testing.T) {
		for location, says := range map[string]string{
			"slow":      "the storage could not be reached (no connection, no answer in time, or a TLS certificate that is not trusted)",
			"many-keys": "a page of more than 1000 objects",
			"bloated":   "more than 4194304 bytes",
		} {
			out, err := tenantKubectl(location).output(documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION"))
			Expect(err).To(HaveOccurred(), location)
			Expect(out).To(ContainSubstring("(ServiceUnavailable)"), location)
			Expect(out).To(ContainSubstring("EchoBackupLocation "+tn.ns+"/"+location+": "), location)
			Expect(out).To(ContainSubstring(says), location)
		}
		endless := tenantKubectl("endless").run(Default, documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION"))
		Expect(strings.Count(endless, "\nendless.team.web.b-")).To(Equal(10_000), "a listing cut at 20,000 objects lists their 10,000 backups")
		Expect(endless).To(ContainSubstring("holds more than a listing reads"))
		wide := tenantKubectl("huge-manifests").run(Default, documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION", "-o", "wide"))
		Expect(wide).To(MatchRegexp(`(?m)^huge-manifests\.team\.web\.b-0000000\s+team/web\s+\S+\s+0\s+false\s+.*larger than the 1048576 bytes a listing reads: a restore reads it whole$`))
	})

	// What the operator sent for: the tenant's manifests of 256 MiB were
	// read a MiB each at most, give or take what the connections buffered
	// (a few MiB on loopback).
	Expect(storage.Stats("huge-manifests").BytesSent.Load()).To(BeNumerically("<", 100*(8<<20)))

	grown := peakRSS(Default) - peakBefore
	if precise {
		grown = peakRSS(Default) - int(rssBefore)
	}
	Expect(grown).To(BeNumerically("<", listingRSSBound>>10), "the operator's resident memory grew by %d MiB", grown>>10)
	t.Logf("the operator's resident memory grew by %d MiB at most while it listed the tenant's storage", grown>>10)
	Expect(op.pid()).To(Equal(pid), "the operator was restarted")
	Expect(op.unexpectedExits()).To(BeEmpty(), "the operator exited")
}

// bystanderWithABackup makes a namespace whose location lists a bucket of
// a real S3 server holding one backup, written by the data mover, and
// returns it and the backup's StoredBackup name.
func bystanderWithABackup(t *testing.T) (namespace, backup string) {
	t.Helper()
	ctx := context.Background()
	s3 := s3server.StartAt(t, storageHost, "echo-backups")
	storage := s3.Storage("echo-backups", "bystander")
	namespace = newRestrictedNamespace(t)
	secret := s3.CredentialsSecret(namespace)
	secret.Labels = map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "offsite"},
		Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *storage.S3},
	})).To(Succeed())
	store, err := backupstore.NewS3StoreWithCredentials(backupstore.S3Config{
		Endpoint: storage.S3.Endpoint, Bucket: storage.S3.Bucket, Prefix: storage.S3.Prefix, PathStyle: true,
	}, s3.AccessKey, s3.SecretKey)
	Expect(err).NotTo(HaveOccurred())
	data := t.TempDir()
	Expect(os.WriteFile(filepath.Join(data, "journal.jsonl"), []byte("an entry\n"), 0o600)).To(Succeed())
	_, err = datamover.Backup(ctx, datamover.BackupOptions{
		DataDir: data, Store: store, Key: namespace + "/web/nightly.1",
		Config: json.RawMessage(`{}`), Source: backupstore.Source{Namespace: namespace, Name: "web"},
	})
	Expect(err).NotTo(HaveOccurred())
	return namespace, "offsite." + namespace + ".web.nightly.1"
}

// resetPeakRSS sets the operator's peak resident memory (VmHWM) to its
// current one, so that peakRSS then tells the peak of what follows;
// false when the kernel does not let it.
func resetPeakRSS() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", op.pid()), []byte("5"), 0) == nil
}
