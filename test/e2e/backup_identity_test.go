package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// identityNamespace is TestBackupWithWorkloadIdentity's namespace, whose
// Job pods are held (see heldJobPodNamespace).
const identityNamespace = "e2e-identity"

// minioAudience is the audience MinIO's OpenID configuration requires of
// a token in the test, and backup-restore.md's example.
const minioAudience = "minio"

// TestBackupWithWorkloadIdentity backs up and restores a journal with no
// credentials Secret at all: the data mover runs as a ServiceAccount
// opted in as backup-restore.md tells, with a token kube-apiserver issues
// for MinIO's audience, which MinIO's STS, trusting kube-apiserver's
// ServiceAccount issuer through its OpenID discovery, exchanges for
// credentials of the policy named after the ServiceAccount, over TLS. Another
// ServiceAccount's token is refused, and a ServiceAccount that did not
// opt in, or did not allow the endpoint, gets no Job.
func TestBackupWithWorkloadIdentity(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	s3 := s3server.StartTLSWithOpenID(t, storageHost, issuerDiscovery(t), "echo-backups")
	ns := identityNamespace
	Expect(createNamespace(ctx, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})).To(Succeed())
	Expect(k8sClient.Create(ctx, s3.CASecret(t, ns))).To(Succeed())

	d := &docsKubectl{ns: ns, values: map[string]string{"SERVICEACCOUNT": "echo-backup", "ENDPOINTS": s3.Endpoint}}
	Expect(d.run(Default, documented("create", "serviceaccount", "SERVICEACCOUNT"))).To(ContainSubstring("serviceaccount/echo-backup created"))
	Expect(d.run(Default, documented("label", "serviceaccount", "SERVICEACCOUNT", "echo.dev/storage-identity=true"))).To(ContainSubstring("labeled"))
	Expect(d.run(Default, documented("annotate", "serviceaccount", "SERVICEACCOUNT", "echo.dev/storage-identity-audiences=minio"))).
		To(ContainSubstring("annotated"))
	// MinIO serves its STS on the storage's endpoint: one endpoint to allow.
	Expect(d.run(Default, documented("annotate", "serviceaccount", "SERVICEACCOUNT", "echo.dev/storage-endpoints=ENDPOINTS"))).
		To(ContainSubstring("annotated"))
	s3.AddPolicy(t, "system:serviceaccount:"+ns+":echo-backup", s3server.BucketPolicy("echo-backups"))
	as := func(serviceAccount string) echov1alpha1.BackupStorage {
		storage := s3.Storage("echo-backups", "identity")
		storage.S3.CredentialsSecretRef = nil
		storage.S3.Identity = &echov1alpha1.S3Identity{ServiceAccountName: serviceAccount, Audience: minioAudience}
		return storage
	}

	data, journal := journaledEcho(t, types.NamespacedName{Namespace: ns, Name: "journal"}, "")
	mover := newCopyMover(t, data)
	backup := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: "journal", Storage: as("echo-backup")}}
	Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	job := waitJobNamed(t, ns, "journal-1-backup")
	expectIdentityPod(job, "echo-backup")
	mover.end(t, job)
	backup = waitBackupComplete(t, client.ObjectKeyFromObject(backup))
	Expect(backup.Status.Location).To(HaveSuffix("echo-backups/identity/" + ns + "/journal/journal-1"))

	t.Run("a restore as the ServiceAccount gives the journal back", func(t *testing.T) {
		RegisterTestingT(t)
		mover.restoreCopy(t, ns, backup.Name, journal)
	})

	t.Run("another ServiceAccount's token is refused", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder",
			Labels: map[string]string{echov1alpha1.StorageIdentityLabel: "true"},
			Annotations: map[string]string{echov1alpha1.StorageIdentityAudiencesAnnotation: minioAudience,
				echov1alpha1.StorageEndpointsAnnotation: s3.Endpoint}}})).To(Succeed())
		intruder := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-intruder"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: "journal", Storage: as("intruder")}}
		Expect(k8sClient.Create(ctx, intruder)).To(Succeed())
		mover.end(t, waitJobNamed(t, ns, "journal-intruder-backup"))
		failed := waitBackupFailed(t, client.ObjectKeyFromObject(intruder))
		Expect(failed.Reason).To(Equal(echov1alpha1.BackupReasonCredentialsError), failed.Message)
		Expect(failed.Message).To(ContainSubstring("the STS did not exchange the web identity token"))
	})

	t.Run("a token for an endpoint the ServiceAccount did not allow gets no Job", func(t *testing.T) {
		RegisterTestingT(t)
		// A ServiceAccount allowed, as backup-restore.md shows for AWS, to
		// send its token to AWS's STS and S3 only.
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-backup",
			Labels:      map[string]string{echov1alpha1.StorageIdentityLabel: "true"},
			Annotations: map[string]string{echov1alpha1.StorageIdentityAudiencesAnnotation: minioAudience}}})).To(Succeed())
		aws := &docsKubectl{ns: ns, values: map[string]string{"SERVICEACCOUNT": "aws-backup"}}
		Expect(aws.run(Default, documented("annotate", "serviceaccount", "SERVICEACCOUNT",
			"echo.dev/storage-endpoints=https://s3.eu-west-3.amazonaws.com,https://sts.eu-west-3.amazonaws.com"))).To(ContainSubstring("annotated"))
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-elsewhere"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: "journal", Storage: as("aws-backup")}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		failed := waitBackupFailed(t, client.ObjectKeyFromObject(b))
		Expect(failed.Reason).To(Equal(echov1alpha1.ReasonEndpointNotAllowed), failed.Message)
		Expect(failed.Message).To(ContainSubstring(`the ServiceAccount "aws-backup" does not allow its token to be sent to ` + s3.Endpoint))
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "journal-elsewhere-backup"}, &batchv1.Job{})).NotTo(Succeed())
	})

	t.Run("a ServiceAccount that did not opt in gets no Job", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"}})).To(Succeed())
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-deployer"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: "journal", Storage: as("deployer")}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		failed := waitBackupFailed(t, client.ObjectKeyFromObject(b))
		Expect(failed.Reason).To(Equal(echov1alpha1.ReasonIdentityNotOptedIn), failed.Message)
		Expect(failed.Message).To(ContainSubstring("kubectl label serviceaccount -n " + ns + " deployer echo.dev/storage-identity=true"))
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "journal-deployer-backup"}, &batchv1.Job{})).NotTo(Succeed())
	})
}

// issuerDiscovery is kube-apiserver's ServiceAccount issuer as MinIO's
// OpenID configuration names it: the discovery document and keys, which
// kube-apiserver serves to anyone once the issuer-discovery role is bound
// to unauthenticated users, as backup-restore.md tells.
func issuerDiscovery(t *testing.T) s3server.OpenID {
	t.Helper()
	ctx := context.Background()
	admin := &docsKubectl{ns: metav1.NamespaceDefault, values: map[string]string{"BINDING": "service-account-issuer-discovery"}}
	Expect(admin.run(Default, documented("create", "clusterrolebinding", "BINDING",
		"--clusterrole=system:service-account-issuer-discovery", "--group=system:unauthenticated"))).To(ContainSubstring("created"))
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "service-account-issuer-discovery"}})
	})
	clientset, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	raw, err := clientset.RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	var doc struct {
		Issuer string `json:"issuer"`
	}
	Expect(json.Unmarshal(raw, &doc)).To(Succeed())
	return s3server.OpenID{ConfigURL: strings.TrimSuffix(doc.Issuer, "/") + "/.well-known/openid-configuration", CA: cfg.CAData,
		ClientID: minioAudience, ClaimName: "sub"}
}

// expectIdentityPod checks that the Job's pod runs as serviceAccount with
// only a token of the identity's audience, and no keys.
func expectIdentityPod(job *batchv1.Job, serviceAccount string) {
	pod := job.Spec.Template.Spec
	Expect(pod.ServiceAccountName).To(Equal(serviceAccount))
	Expect(*pod.AutomountServiceAccountToken).To(BeFalse(), "the API token is not mounted")
	var audiences []string
	for _, v := range pod.Volumes {
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				audiences = append(audiences, src.ServiceAccountToken.Audience)
			}
		}
	}
	Expect(audiences).To(Equal([]string{minioAudience}))
	for _, e := range pod.Containers[0].Env {
		Expect(e.Name).NotTo(Equal(moverprotocol.EnvAccessKeyID), "an identity's mover has no keys")
	}
}

// waitBackupFailed waits for the backup's Failed condition.
func waitBackupFailed(t *testing.T, key types.NamespacedName) *metav1.Condition {
	t.Helper()
	var failed *metav1.Condition
	Eventually(func(g Gomega) {
		b := &echov1alpha1.EchoBackup{}
		g.Expect(k8sClient.Get(context.Background(), key, b)).To(Succeed())
		failed = meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed)
		g.Expect(failed).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	return failed
}
