//go:build linux

package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/cmd/manager/app"
)

// A user who may edit the echo.dev objects of a namespace but not read its
// Secrets names one of them (the database's password) as the S3
// credentials of an endpoint of their own, to read it from the requests'
// signatures. The operator gives no Secret to a data mover Job, and reads
// none for the live API, unless it carries echo.dev/storage-credentials=true,
// which only someone who may edit the Secret can set.

// echoEditor is a user of ns with the Echo editor and viewer roles
// (config/rbac), and nothing else: unlike the built-in edit role, they
// grant no right on Secrets.
type echoEditor struct {
	ns   string
	user string
	c    client.Client // echo.dev, as the user
	live client.Client // live.echo.dev, as the user
}

func newEchoEditor(t *testing.T) echoEditor {
	t.Helper()
	ctx := context.Background()
	ns := newRestrictedNamespace(t)
	user := "echo-editor-of-" + ns
	for _, role := range []string{"echo-editor-role", "echo-viewer-role"} {
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
	}
	asUser := impersonating(user)
	c, err := client.New(asUser, client.Options{Scheme: app.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	liveScheme := runtime.NewScheme()
	Expect(livev1alpha1.AddToScheme(liveScheme)).To(Succeed())
	live, err := client.New(asUser, client.Options{Scheme: liveScheme})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		g.Expect(allowed(user, ns, "create", "echo.dev", "echobackups")).To(BeTrue())
		g.Expect(allowed(user, ns, "list", livev1alpha1.GroupName, livev1alpha1.StoredBackupResource)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	for _, verb := range []string{"get", "list", "update", "patch"} {
		Expect(allowed(user, ns, verb, "", "secrets")).To(BeFalse(), "the Echo roles grant %s on Secrets", verb)
	}
	return echoEditor{ns: ns, user: user, c: c, live: live}
}

// recordingEndpoint is an S3 endpoint of the attacker's: it answers every
// request with an empty bucket and keeps the Authorization header.
type recordingEndpoint struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecordingEndpoint(t *testing.T) *recordingEndpoint {
	e := &recordingEndpoint{}
	// On the address the suite's egress policy allows: the attack is on
	// the Secret, not on where the operator may connect.
	l, err := net.Listen("tcp", net.JoinHostPort(storageHost, "0"))
	Expect(err).NotTo(HaveOccurred())
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.auths = append(e.auths, r.Header.Get("Authorization"))
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` +
			`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>loot</Name><KeyCount>0</KeyCount>` +
			`<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
	}))
	e.Listener = l
	e.Start()
	t.Cleanup(e.Close)
	return e
}

func (e *recordingEndpoint) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auths...)
}

func TestEchoEditorCannotUseASecretAsStorageCredentials(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	registerLiveAPI(t)
	attacker := newEchoEditor(t)
	ns := attacker.ns

	// The namespace's database password, which the attacker may not read.
	const password = "db-password-never-sent"
	Expect(k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-credentials", Labels: map[string]string{"app": "db"}},
		StringData: map[string]string{"password": password},
	})).To(Succeed())
	err := attacker.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-credentials"}, &corev1.Secret{})
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the attacker reads the Secret: %v", err)

	endpoint := newRecordingEndpoint(t)
	loot := echov1alpha1.S3Storage{
		Endpoint: endpoint.URL, Bucket: "loot", Region: "us-east-1", ForcePathStyle: true,
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "db-credentials", AccessKeyIDKey: "password", SecretAccessKeyKey: "password"},
	}
	fix := "kubectl label secret -n " + ns + " db-credentials echo.dev/storage-credentials=true"
	webKey := types.NamespacedName{Namespace: ns, Name: "web"}
	Expect(attacker.c.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webKey.Name},
		Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}},
	})).To(Succeed())
	waitReady(t, webKey, 1)
	// Each attempt fails on its own; the checks after them run as the
	// parent test.
	run := func(name string, attempt func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			RegisterTestingT(t)
			attempt(t)
		})
		RegisterTestingT(t)
	}

	run("a backup naming the Secret fails and starts no Job", func(t *testing.T) {
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exfiltrate"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: webKey.Name, Storage: echov1alpha1.BackupStorage{S3: loot.DeepCopy()}}}
		Expect(attacker.c.Create(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &echov1alpha1.EchoBackup{}
			g.Expect(attacker.c.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionFailed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(echov1alpha1.ReasonSecretNotOptedIn))
			g.Expect(c.Message).To(ContainSubstring(fix))
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string {
			return eventMessages(g, client.ObjectKeyFromObject(b), echov1alpha1.EventReasonSecretNotOptedIn)
		}, timeout, interval).Should(ContainElement(ContainSubstring(fix)))
		expectNoJobs(ns, "exfiltrate-backup")
	})

	run("a restore naming the Secret fails and starts no Job", func(t *testing.T) {
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exfiltrate"},
			Spec: echov1alpha1.EchoRestoreSpec{EchoName: "copy",
				Source: echov1alpha1.RestoreSource{Storage: &echov1alpha1.BackupStorage{S3: loot.DeepCopy()}, Key: ns + "/web/any"}}}
		Expect(attacker.c.Create(ctx, rs)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &echov1alpha1.EchoRestore{}
			g.Expect(attacker.c.Get(ctx, client.ObjectKeyFromObject(rs), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.RestoreConditionFailed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.ReasonSecretNotOptedIn))
			g.Expect(c.Message).To(ContainSubstring(fix))
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string {
			return eventMessages(g, client.ObjectKeyFromObject(rs), echov1alpha1.EventReasonSecretNotOptedIn)
		}, timeout, interval).Should(ContainElement(ContainSubstring(fix)))
		expectNoJobs(ns, "exfiltrate-inspect", "exfiltrate-restore")
	})

	run("a location naming the Secret is not listed", func(t *testing.T) {
		Expect(attacker.c.Create(ctx, &echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exfiltrate"},
			Spec:       echov1alpha1.EchoBackupLocationSpec{S3: loot},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			err := attacker.live.List(ctx, &livev1alpha1.StoredBackupList{}, client.InNamespace(ns),
				client.MatchingLabels{livev1alpha1.LocationLabel: "exfiltrate"})
			g.Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "listing: %v", err)
			g.Expect(err.Error()).To(ContainSubstring("EchoBackupLocation " + ns + "/exfiltrate"))
			g.Expect(err.Error()).To(ContainSubstring(`the Secret "db-credentials" has no label echo.dev/storage-credentials=true`))
			g.Expect(err.Error()).To(ContainSubstring(fix))
		}, timeout, interval).Should(Succeed())
	})

	// Nothing reached the endpoint. It is reachable: a location naming
	// credentials their owner opted in is listed from it.
	Expect(endpoint.requests()).To(BeEmpty(), "requests reached the attacker's endpoint")
	Expect(k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-credentials", Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "opted-in-key", "AWS_SECRET_ACCESS_KEY": "opted-in-secret"},
	})).To(Succeed())
	optedIn := loot.DeepCopy()
	optedIn.CredentialsSecretRef = &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "opted-in"},
		Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *optedIn},
	})).To(Succeed())
	// Until the manager's cache has the new location, the list names no
	// location and succeeds empty: wait for the endpoint to be asked.
	Eventually(func(g Gomega) {
		g.Expect(attacker.live.List(ctx, &livev1alpha1.StoredBackupList{}, client.InNamespace(ns),
			client.MatchingLabels{livev1alpha1.LocationLabel: "opted-in"})).To(Succeed())
		g.Expect(endpoint.requests()).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	auths := endpoint.requests()
	for _, auth := range auths {
		Expect(auth).To(ContainSubstring("Credential=opted-in-key/"))
		Expect(auth).NotTo(ContainSubstring(password))
	}
	Expect(op.unexpectedExits()).To(BeEmpty(), "the operator exited")
}

// expectNoJobs checks for a while that none of the named Jobs appears.
func expectNoJobs(ns string, names ...string) {
	Consistently(func(g Gomega) {
		for _, name := range names {
			err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Job %s/%s: %v", ns, name, err)
		}
	}, "2s", interval).Should(Succeed())
}
