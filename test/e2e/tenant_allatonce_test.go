//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	echochart "github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/test/harness/fakes3"
	"github.com/echo-operator/echo-operator/test/harness/largestecho"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
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
// Secret that did not opt in as credentials, labels large objects of
// every kind the operator watches, plants a backup's Job, names a claim
// that did not opt in and a token for an endpoint it did not allow,
// creates hundreds of Echoes and some of the largest admitted, and calls
// the live API's port directly. The manager's memory stays within
// hostileTenantBound, it stays up, a new Echo of another namespace
// becomes Ready in its usual time, and the tenant's namespace deletes.
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
	refusals := startRefusedWork(t, tn, webKey.Name, storage.Endpoint)
	// A flood of default Echoes and some of the largest admitted, and
	// calls to the live API's port with a ServiceAccount's token and none.
	createFlood(t, tn, allAtOnceFlood)
	for i := range allAtOnceLargest {
		Expect(tn.c.Create(ctx, echoOfSpec(tn.ns, fmt.Sprintf("largest-%d", i), largestecho.RunnableSpec(simcluster.StorageClassName)))).To(Succeed())
	}
	revisions := "/apis/live.echo.dev/v1alpha1/namespaces/" + tn.ns + "/echorevisions"
	token := serviceAccountToken(t, tn.ns, "view")
	Expect(directCall(revisions, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, nil)).To(Equal(http.StatusUnauthorized))
	Expect(directCall(revisions, func(*http.Request) {}, nil)).To(Equal(http.StatusUnauthorized))

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
	refusals["borrowed"] = echov1alpha1.ReasonSecretNotOptedIn
	for name, reason := range refusals {
		failed := waitBackupFailed(t, types.NamespacedName{Namespace: tn.ns, Name: name})
		Expect(failed.Reason).To(Equal(reason), "%s: %s", name, failed.Message)
	}

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
	// All of it uninstalled and collected.
	deleteNamespaceAndWait(tn.ns)
}

// How many default and largest Echoes TestHostileTenantAllAtOnce's tenant
// creates at once.
const (
	allAtOnceFlood   = 200
	allAtOnceLargest = 10
)

// startRefusedWork creates, as the tenant, backups of echo that the
// operator must refuse, each by the reason it is named with: one whose
// Job the tenant created first, one of a claim that did not opt in, and
// one that would send a ServiceAccount's token to an endpoint it did not
// allow.
func startRefusedWork(t *testing.T, tn tenant, echo, endpoint string) map[string]string {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{echochart.ManagedByLabel: echov1alpha1.ManagedBy, echochart.InstanceLabel: echo,
		echochart.ComponentLabel: "data-mover", echov1alpha1.BackupLabel: "planted"}
	Expect(tn.c.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "planted-backup", Labels: labels},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{restrictedContainer("mover")}},
		}},
	})).To(Succeed())
	Expect(tn.c.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "payments-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	})).To(Succeed())
	Expect(tn.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "backup-identity",
		Labels: map[string]string{echov1alpha1.StorageIdentityLabel: "true"}}})).To(Succeed())
	withSecret := &echov1alpha1.S3Storage{Endpoint: endpoint, Bucket: "loot", ForcePathStyle: true,
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "own-storage"}}
	withToken := &echov1alpha1.S3Storage{Endpoint: endpoint, Bucket: "loot", ForcePathStyle: true,
		Identity: &echov1alpha1.S3Identity{ServiceAccountName: "backup-identity", STSEndpoint: "https://sts.storage.test"}}
	for name, storage := range map[string]echov1alpha1.BackupStorage{
		"planted": {S3: withSecret},
		"claim":   {PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "payments-data"}},
		"token":   {S3: withToken},
	} {
		Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: echo, Storage: storage}})).To(Succeed(), name)
	}
	return map[string]string{"planted": echov1alpha1.ReasonJobNotOwned, "claim": echov1alpha1.ReasonClaimNotOptedIn,
		"token": echov1alpha1.ReasonEndpointNotAllowed}
}
