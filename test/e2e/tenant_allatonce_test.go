//go:build linux

package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/fakes3"
)

// hostileTenantBound is what the manager's resident memory may grow by
// while one tenant does every attack of the hostile-tenant suite at once:
// the bound docs/architecture.md states ("What a tenant can cost the
// manager").
const hostileTenantBound = 256 << 20

// neighbourReadyWithin is how long a new Echo of another namespace may
// take to become Ready meanwhile: its usual time on this cluster is a few
// seconds.
const neighbourReadyWithin = 30 * time.Second

// TestHostileTenantAllAtOnce: one tenant, at once, lists a storage of its
// own that answers with endless pages, huge pages, huge manifests and not
// at all, points locations at addresses the egress policy refuses, names a
// Secret that did not opt in as credentials, and labels large objects of
// every kind the operator watches. The manager's memory stays within
// hostileTenantBound, it stays up, and a new Echo of another namespace
// becomes Ready in its usual time.
func TestHostileTenantAllAtOnce(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	installUserRoles(t)
	tn := newTenant(t)
	webKey := types.NamespacedName{Namespace: tn.ns, Name: "web"}
	Expect(tn.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: webKey.Name}})).To(Succeed())
	waitReady(t, webKey, 1)

	pid := op.pid()
	precise := resetPeakRSS()
	rssBefore, peakBefore := int(managerRSS()>>10), peakRSS(Default)

	// Its own storage, hostile in every way a listing can meet.
	storage := fakes3.StartAt(t, storageHost)
	Expect(tn.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "own-storage", Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "tenant", "AWS_SECRET_ACCESS_KEY": "tenant-secret"},
	})).To(Succeed())
	location := func(name, endpoint, bucket, secret string) {
		Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
			Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
				Endpoint: endpoint, Bucket: bucket, Prefix: "backups", ForcePathStyle: true,
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: secret},
			}},
		})).To(Succeed(), name)
	}
	for bucket, behaviour := range hostileBuckets {
		storage.Add(bucket, behaviour)
		location(bucket, storage.Endpoint, bucket, "own-storage")
	}
	// Addresses the egress policy refuses, and a Secret that did not opt
	// in, named by a location and by a backup.
	storage.Add("loot", fakes3.Objects(nil))
	refused := newCountingServer(t, "127.0.0.2")
	location("loopback", refused.URL, "loot", "own-storage")
	Expect(tn.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "db-credentials"},
		StringData: map[string]string{"password": "never-sent"}})).To(Succeed())
	location("borrowed", storage.Endpoint, "loot", "db-credentials")
	Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "borrowed"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: webKey.Name, Storage: echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
			Endpoint: storage.Endpoint, Bucket: "loot", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "db-credentials", AccessKeyIDKey: "password", SecretAccessKeyKey: "password"},
		}}}})).To(Succeed())

	// Lists across namespaces, which wait for the storage that does not
	// answer, run throughout.
	var lists []*backgroundKubectl
	for range 3 {
		lists = append(lists, (&docsKubectl{ns: tn.ns}).start(t, documented("get", "storedbackups", "-A")))
	}
	// Large objects labelled as the operator's, the chart's and the
	// release's.
	createBulk(t, tn, bulkLabelledObjects(tn.ns, webKey.Name, 16))

	neighbour := types.NamespacedName{Namespace: newRestrictedNamespace(t), Name: "neighbour"}
	created := time.Now()
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: neighbour.Namespace, Name: neighbour.Name}})).To(Succeed())
	waitReady(t, neighbour, 1)
	readyIn := time.Since(created)

	for _, l := range lists {
		out := l.exit()
		Expect(out).To(ContainSubstring("Warning: EchoBackupLocation "+tn.ns+"/slow: "), out)
		Expect(out).To(ContainSubstring("Warning: EchoBackupLocation "+tn.ns+"/loopback: the operator does not connect to 127.0.0.2"), out)
		Expect(out).To(ContainSubstring("Warning: EchoBackupLocation "+tn.ns+"/borrowed: the Secret \"db-credentials\" has no label"), out)
	}
	Eventually(func(g Gomega) {
		b := &echov1alpha1.EchoBackup{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: tn.ns, Name: "borrowed"}, b)).To(Succeed())
		g.Expect(b.Status.Conditions).To(ContainElement(HaveField("Reason", echov1alpha1.ReasonSecretNotOptedIn)))
	}, timeout, interval).Should(Succeed())

	grown := peakRSS(Default) - peakBefore
	if precise {
		grown = peakRSS(Default) - rssBefore
	}
	t.Logf("a neighbour's Echo was Ready in %s; the manager's resident memory grew by %d MiB at most", readyIn.Round(100*time.Millisecond), grown>>10)
	Expect(readyIn).To(BeNumerically("<", neighbourReadyWithin), "the neighbour's Echo took %s to become Ready", readyIn)
	Expect(grown).To(BeNumerically("<", hostileTenantBound>>10), "the manager's resident memory grew by %d MiB", grown>>10)
	Expect(refused.requests.Load()).To(BeZero(), "the refused server got requests")
	Expect(storage.Stats("loot").ListRequests.Load()+storage.Stats("loot").GetRequests.Load()).To(BeZero(), "the borrowed Secret's endpoint got requests")
	Expect(op.pid()).To(Equal(pid), "the operator was restarted")
	Expect(op.unexpectedExits()).To(BeEmpty(), "the operator exited")
}
