package controllers_test

import (
	"context"
	"path"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// A backup may authenticate as a ServiceAccount of its namespace only when
// the ServiceAccount opted in (echo.dev/storage-identity=true) and allows
// the audience of the token its Job asks for: a Job's pod may run as any
// ServiceAccount and get a token for any audience.
func TestBackupNeedsOptedInIdentity(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, persistentEcho))
	rollOut(t, echoKey)
	optedIn := map[string]string{echov1alpha1.StorageIdentityLabel: "true"}
	const s3, sts = "https://s3.eu-west-3.amazonaws.com", "https://sts.eu-west-3.amazonaws.com"
	for name, meta := range map[string]metav1.ObjectMeta{
		"deployer":    {},
		"echo-backup": {Labels: optedIn, Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: s3 + "," + sts}},
		"minio-backup": {Labels: optedIn,
			Annotations: map[string]string{echov1alpha1.StorageIdentityAudiencesAnnotation: "minio, sts.example.test",
				echov1alpha1.StorageEndpointsAnnotation: s3 + ", " + sts}},
		"no-endpoints": {Labels: optedIn},
		"storage-only": {Labels: optedIn, Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: s3}},
	} {
		meta.Namespace, meta.Name = ns, name
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta})).To(Succeed())
	}
	backupAs := func(name, serviceAccount, audience string) *echov1alpha1.EchoBackup {
		b := newBackup(ns, name, echoKey.Name)
		b.Spec.Storage.S3.Endpoint = s3
		b.Spec.Storage.S3.CredentialsSecretRef = nil
		b.Spec.Storage.S3.Identity = &echov1alpha1.S3Identity{ServiceAccountName: serviceAccount, Audience: audience,
			RoleARN: "arn:aws:iam::111122223333:role/echo-backup", STSEndpoint: sts}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		return b
	}

	// The token is accepted by the real STS: whoever runs the endpoint
	// it is sent to gets the role's credentials.
	for _, tc := range []struct {
		name, backup, serviceAccount, says string
	}{
		{"a ServiceAccount that lists no endpoint", "no-endpoints", "no-endpoints",
			`the ServiceAccount "no-endpoints" does not allow its token to be sent to ` + sts},
		{"an STS the ServiceAccount does not list", "storage-only", "storage-only",
			"kubectl annotate serviceaccount -n " + ns + " storage-only --overwrite echo.dev/storage-endpoints=" + s3 + ":443," + sts},
	} {
		t.Run(tc.name+" fails the backup with EndpointNotAllowed, and no Job starts", func(t *testing.T) {
			RegisterTestingT(t)
			b := backupAs(tc.backup, tc.serviceAccount, "")
			c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
			Expect(c.Reason).To(Equal(echov1alpha1.ReasonEndpointNotAllowed))
			Expect(c.Message).To(ContainSubstring(tc.says))
			expectWarning(t, b, echov1alpha1.EventReasonEndpointNotAllowed, tc.says)
			expectNoJob(t, ns, b.Name+"-backup")
		})
	}

	for _, tc := range []struct {
		name, backup, serviceAccount, audience, says string
	}{
		{"a ServiceAccount that does not exist", "missing", "nobody", "", `ServiceAccount "nobody" of storage.s3.identity does not exist in namespace ` + ns},
		{"a ServiceAccount without the label", "unlabelled", "deployer", "",
			"if it is the storage's identity, label it (kubectl label serviceaccount -n " + ns + " deployer echo.dev/storage-identity=true)"},
		{"an audience the ServiceAccount does not allow", "api-audience", "echo-backup", "https://kubernetes.default.svc",
			`ServiceAccount "echo-backup" does not allow tokens for the audience "https://kubernetes.default.svc"`},
		{"an audience beside those the ServiceAccount lists", "unlisted-audience", "minio-backup", "sts.amazonaws.com",
			`ServiceAccount "minio-backup" does not allow tokens for the audience "sts.amazonaws.com"`},
	} {
		t.Run(tc.name+" fails the backup, and no Job starts", func(t *testing.T) {
			RegisterTestingT(t)
			b := backupAs(tc.backup, tc.serviceAccount, tc.audience)
			c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
			Expect(c.Reason).To(Equal(echov1alpha1.ReasonIdentityNotOptedIn))
			Expect(c.Message).To(ContainSubstring(tc.says))
			Expect(c.Message).To(HaveSuffix("then back up again: this EchoBackup has failed for good"))
			Eventually(func(g Gomega) {
				var found bool
				for _, ev := range objectEvents(g, ns, b.Name) {
					if ev.Reason == echov1alpha1.EventReasonIdentityNotOptedIn {
						found = true
						g.Expect(ev).To(operatorEvent(b, corev1.EventTypeWarning, echov1alpha1.EventReasonIdentityNotOptedIn))
						g.Expect(ev.Action).To(Equal(echov1alpha1.EventActionCheckingStorageSecrets))
					}
				}
				g.Expect(found).To(BeTrue(), "no Event %s", echov1alpha1.EventReasonIdentityNotOptedIn)
			}, timeout, interval).Should(Succeed())
			expectNoJob(t, ns, b.Name+"-backup")
		})
	}

	for _, tc := range []struct {
		name, backup, serviceAccount, audience, wantAudience string
	}{
		{"the default audience", "default-audience", "echo-backup", "", echov1alpha1.DefaultIdentityAudience},
		{"an audience the ServiceAccount lists", "listed-audience", "minio-backup", "minio", "minio"},
	} {
		t.Run(tc.name+" runs the Job as the ServiceAccount, with a token and no keys", func(t *testing.T) {
			RegisterTestingT(t)
			b := backupAs(tc.backup, tc.serviceAccount, tc.audience)
			job := &batchv1.Job{}
			Eventually(func() error {
				return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.Name + "-backup"}, job)
			}, timeout, interval).Should(Succeed())
			pod := job.Spec.Template.Spec
			Expect(pod.ServiceAccountName).To(Equal(tc.serviceAccount))
			Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
			var tokens []corev1.ServiceAccountTokenProjection
			for _, v := range pod.Volumes {
				if v.Projected != nil {
					for _, src := range v.Projected.Sources {
						tokens = append(tokens, *src.ServiceAccountToken)
					}
				}
			}
			Expect(tokens).To(HaveLen(1))
			Expect(tokens[0].Audience).To(Equal(tc.wantAudience))
			env := map[string]string{}
			for _, e := range pod.Containers[0].Env {
				env[e.Name] = e.Value
			}
			Expect(env).To(HaveKeyWithValue(moverprotocol.EnvRoleARN, "arn:aws:iam::111122223333:role/echo-backup"))
			Expect(env).To(HaveKey(moverprotocol.EnvWebIdentityTokenFile))
			Expect(env).NotTo(HaveKey(moverprotocol.EnvAccessKeyID))
			Expect(pod.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", path.Dir(env[moverprotocol.EnvWebIdentityTokenFile]))))
		})
	}
}

// An SSE-C key goes with every request: only to the endpoints its Secret
// lists.
func TestBackupSendsAnSSECKeyOnlyWhereAllowed(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, persistentEcho))
	rollOut(t, echoKey)
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-key",
		Labels:      map[string]string{echov1alpha1.StorageSecretLabel: "true"},
		Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: "https://s3.eu-west-3.amazonaws.com"}},
		StringData: map[string]string{"key": "0123456789abcdef0123456789abcdef"}})).To(Succeed())
	backupTo := func(name, endpoint string) *echov1alpha1.EchoBackup {
		b := newBackup(ns, name, echoKey.Name)
		b.Spec.Storage.S3.Endpoint = endpoint
		b.Spec.Storage.S3.Encryption = &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
			CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "key"}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		return b
	}

	b := backupTo("elsewhere", "https://s3.attacker.example.test")
	c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
	Expect(c.Reason).To(Equal(echov1alpha1.ReasonEndpointNotAllowed))
	says := `the Secret "backup-key" does not allow its SSE-C key to be sent to https://s3.attacker.example.test`
	Expect(c.Message).To(ContainSubstring(says))
	expectWarning(t, b, echov1alpha1.EventReasonEndpointNotAllowed, says)
	expectNoJob(t, ns, "elsewhere-backup")

	waitJob(t, ns, backupTo("allowed", "https://s3.eu-west-3.amazonaws.com").Name+"-backup")
}

// The endpoints the operator's administrator allows (--storage-endpoints,
// testStorageEndpoints) need no annotation: a token for its STS and
// storage, and an SSE-C key for its storage, are given to the Job. An
// endpoint neither lists is refused, with both ways to allow it.
func TestBackupSendsCredentialsWhereTheAdministratorAllows(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, persistentEcho))
	rollOut(t, echoKey)
	const s3, sts = "https://s3.shared.example.test", "https://sts.shared.example.test"
	Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-backup",
		Labels: map[string]string{echov1alpha1.StorageIdentityLabel: "true"}}})).To(Succeed())
	Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-key",
		Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"key": "0123456789abcdef0123456789abcdef"}})).To(Succeed())
	backupAs := func(name, endpoint string) *echov1alpha1.EchoBackup {
		b := newBackup(ns, name, echoKey.Name)
		b.Spec.Storage.S3.Endpoint = endpoint
		b.Spec.Storage.S3.CredentialsSecretRef = nil
		b.Spec.Storage.S3.Identity = &echov1alpha1.S3Identity{ServiceAccountName: "echo-backup",
			RoleARN: "arn:aws:iam::111122223333:role/echo-backup", STSEndpoint: sts}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		return b
	}
	encrypted := newBackup(ns, "encrypted", echoKey.Name)
	encrypted.Spec.Storage.S3.Endpoint = s3
	encrypted.Spec.Storage.S3.Encryption = &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
		CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "key"}}
	Expect(k8sClient.Create(ctx, encrypted)).To(Succeed())

	waitJob(t, ns, backupAs("identity", s3).Name+"-backup")
	waitJob(t, ns, encrypted.Name+"-backup")

	b := backupAs("elsewhere", "https://s3.attacker.example.test")
	c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
	Expect(c.Reason).To(Equal(echov1alpha1.ReasonEndpointNotAllowed))
	for _, says := range []string{
		`the ServiceAccount "echo-backup" does not allow its token to be sent to https://s3.attacker.example.test, nor does the operator's administrator`,
		"kubectl annotate serviceaccount -n " + ns + " echo-backup --overwrite echo.dev/storage-endpoints=https://s3.attacker.example.test",
		"or the operator's administrator adds it to STORAGE_ENDPOINTS (--storage-endpoints) on the operator's Deployment",
	} {
		Expect(c.Message).To(ContainSubstring(says))
	}
	expectWarning(t, b, echov1alpha1.EventReasonEndpointNotAllowed, "STORAGE_ENDPOINTS")
	expectNoJob(t, ns, b.Name+"-backup")
}
