//go:build linux

package e2e

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// liveAPIService is the Service the live API's APIService names, as
// config/liveapi defines it.
const liveAPIService = "echo-operator-live-api"

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// registerLiveAPI registers the manager's live API with the cluster's
// aggregation layer, as config/liveapi does in a cluster, and waits until
// kube-apiserver reports it Available. The Service is an ExternalName
// Service naming 127.0.0.1, where the manager runs: kube-apiserver
// reaches it only on loopback.
func registerLiveAPI(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	_, port, err := net.SplitHostPort(op.liveAPIAddr)
	Expect(err).NotTo(HaveOccurred())
	portNumber, err := net.LookupPort("tcp", port)
	Expect(err).NotTo(HaveOccurred())
	caBundle, err := os.ReadFile(op.liveAPICA)
	Expect(err).NotTo(HaveOccurred())
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: liveAPIService, Namespace: operatorNamespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "127.0.0.1",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(portNumber)}},
		},
	}
	Expect(k8sClient.Create(ctx, svc)).To(Succeed())
	dyn, err := dynamic.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	name := livev1alpha1.GroupVersion.Version + "." + livev1alpha1.GroupName
	_, err = dyn.Resource(apiServiceGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group":                livev1alpha1.GroupName,
			"version":              livev1alpha1.GroupVersion.Version,
			"service":              map[string]any{"namespace": operatorNamespace, "name": liveAPIService, "port": int64(portNumber)},
			"caBundle":             base64.StdEncoding.EncodeToString(caBundle),
			"groupPriorityMinimum": int64(1000),
			"versionPriority":      int64(15),
		},
	}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		// An APIService that is not available blocks the deletion of
		// every namespace: it goes before the manager stops. (In a
		// cluster, the operator's own ClusterRole owns it, and an
		// uninstall deletes both: TestUninstallRemovesTheLiveAPIService.)
		if err := dyn.Resource(apiServiceGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the APIService: %v", err)
		}
		if err := k8sClient.Delete(ctx, svc); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the live API Service: %v", err)
		}
	})
	Eventually(func(g Gomega) {
		u, err := dyn.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Available"), HaveKeyWithValue("status", "True"))), "conditions: %v", conds)
	}, timeout, interval).Should(Succeed())
}

// liveClient reads the live kinds through kube-apiserver with client-go.
func liveClient() client.Client {
	scheme := runtime.NewScheme()
	Expect(livev1alpha1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// TestLiveAPIReleaseHistory installs an Echo and upgrades it twice, then
// reads its release history through kube-apiserver's aggregation layer
// with kubectl and client-go, as the documentation shows.
func TestLiveAPIReleaseHistory(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	installUserRoles(t)

	ns, other := newRestrictedNamespace(t), newRestrictedNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	for _, n := range []string{ns, other} {
		Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: key.Name},
			Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Message: "first"},
		})).To(Succeed())
	}
	waitReady(t, key, 1)
	for _, message := range []string{"second", "third"} {
		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = message })
		waitReady(t, key, 1)
	}
	waitReady(t, types.NamespacedName{Namespace: other, Name: key.Name}, 1)
	d := &docsKubectl{ns: ns, values: map[string]string{"ECHO": key.Name, "REVISION": "web.v3", "OTHER": other}}

	t.Run("kubectl lists the revisions", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			out := d.run(g, documented("get", "echorevisions"))
			g.Expect(out).To(MatchRegexp(`(?m)^NAME\s+ECHO\s+REVISION\s+STATUS\s+CHART\s+APP VERSION\s+DEPLOYED$`))
			g.Expect(out).To(MatchRegexp(`(?m)^web\.v1\s+web\s+1\s+superseded\s+echo-\S+\s+\S+\s+\S+$`))
			g.Expect(out).To(MatchRegexp(`(?m)^web\.v2\s+web\s+2\s+superseded\s+echo-`))
			g.Expect(out).To(MatchRegexp(`(?m)^web\.v3\s+web\s+3\s+deployed\s+echo-`))
			g.Expect(strings.Count(out, "\n")).To(Equal(4), out)
		}, timeout, interval).Should(Succeed())
		wide := d.run(Default, documented("get", "echorevisions", "-l", "live.echo.dev/echo=ECHO", "-o", "wide"))
		Expect(wide).To(MatchRegexp(`(?m)^web\.v1\s+.*Install complete$`))
		Expect(wide).To(MatchRegexp(`(?m)^web\.v3\s+.*Upgrade complete$`))
		byField := d.run(Default, documented("get", "echorevisions", "--field-selector", "echo=ECHO"))
		Expect(strings.Count(byField, "\n")).To(Equal(4), byField)
		none := d.run(Default, documented("get", "echorevisions", "-l", "live.echo.dev/echo=nothing"))
		Expect(none).To(ContainSubstring("No resources found"))
	})

	t.Run("a revision shows its values and the manifest that is deployed", func(t *testing.T) {
		RegisterTestingT(t)
		out := d.run(Default, documented("get", "echorevision", "REVISION", "-o", "yaml"))
		rev := &livev1alpha1.EchoRevision{}
		Expect(yaml.Unmarshal([]byte(out), rev)).To(Succeed())
		Expect(rev.Echo).To(Equal("web"))
		Expect(rev.Revision).To(Equal(3))
		Expect(rev.Status).To(Equal("deployed"))
		// The release was first deployed by revision 1; times are in
		// seconds, and three revisions may fit in one.
		first := &livev1alpha1.EchoRevision{}
		Expect(liveClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: "web.v1"}, first)).To(Succeed())
		Expect(rev.FirstDeployed.Time).To(BeTemporally("==", first.LastDeployed.Time))
		Expect(rev.FirstDeployed.Time).To(BeTemporally("<=", rev.LastDeployed.Time))
		Expect(rev.Values).NotTo(BeNil())
		Expect(string(rev.Values.Raw)).To(ContainSubstring(`"message":"third"`))

		live := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, key, live)).To(Succeed())
		rendered := manifestDeployment(rev.Manifest, key.Name)
		Expect(rendered.Spec.Template.Spec.Containers[0].Image).To(Equal(live.Spec.Template.Spec.Containers[0].Image))
		Expect(rendered.Spec.Template.Spec.Containers[0].Env).To(Equal(live.Spec.Template.Spec.Containers[0].Env))
		Expect(rendered.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "third"}))

		// Lists carry summaries only.
		list := &livev1alpha1.EchoRevisionList{}
		Expect(liveClient().List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(3))
		for _, item := range list.Items {
			Expect(item.Manifest).To(BeEmpty())
			Expect(item.Values).To(BeNil())
		}
		// Pages of one, as kubectl's --chunk-size asks.
		page := &livev1alpha1.EchoRevisionList{}
		Expect(liveClient().List(ctx, page, client.InNamespace(ns), client.Limit(2))).To(Succeed())
		Expect(page.Items).To(HaveLen(2))
		Expect(page.Continue).NotTo(BeEmpty())
		rest := &livev1alpha1.EchoRevisionList{}
		Expect(liveClient().List(ctx, rest, client.InNamespace(ns), client.Limit(2), client.Continue(page.Continue))).To(Succeed())
		Expect(rest.Items).To(HaveLen(1))
		Expect(rest.Items[0].Name).To(Equal("web.v3"))
		Expect(rest.Continue).To(BeEmpty())

		err := liveClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: "web.v9"}, &livev1alpha1.EchoRevision{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	})

	t.Run("kubectl explains the kind and refuses a watch", func(t *testing.T) {
		RegisterTestingT(t)
		// kube-apiserver aggregates the live API's OpenAPI on its own
		// schedule, after the APIService is available.
		Eventually(func(g Gomega) string { return d.run(g, documented("explain", "echorevisions")) }, timeout, interval).
			Should(ContainSubstring("one revision of an Echo's Helm release"))
		Expect(d.run(Default, documented("explain", "echorevisions.manifest"))).To(ContainSubstring("rendered manifest"))
		out, err := d.output(documented("get", "echorevisions", "--watch"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring(`(MethodNotAllowed): watch is not supported on resources of kind "echorevisions.live.echo.dev"`))
	})

	t.Run("only users who may read the Echoes see their history", func(t *testing.T) {
		RegisterTestingT(t)
		// reader may list the live resources everywhere, and get Echoes
		// only in ns (the built-in view role there).
		createClusterRoleBinding(t, "live-reader", "live-echorevisions-reader", rbacv1.PolicyRule{
			APIGroups: []string{livev1alpha1.GroupName}, Resources: []string{livev1alpha1.EchoRevisionResource}, Verbs: []string{"get", "list"},
		})
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live-reader-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "live-reader"}},
		})).To(Succeed())
		all := d.run(Default, documented("get", "echorevisions", "-A", "--as=live-reader"))
		Expect(all).To(ContainSubstring(ns))
		Expect(all).NotTo(ContainSubstring(other))
		Eventually(func(g Gomega) {
			out, err := d.output(documented("get", "echorevisions", "-n", "OTHER", "--as=live-reader"))
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(ContainSubstring(`needs the right to get echoes.echo.dev in namespace "` + other + `"`))
		}, timeout, interval).Should(Succeed())

		// A user with no rights is refused by kube-apiserver itself.
		out, err := d.output(documented("get", "echorevisions", "--as=live-nobody"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Forbidden"))

		// The view role grants the live resources beside the Echoes.
		Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live-viewer-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "live-viewer"}},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(d.run(g, documented("get", "echorevisions", "--as=live-viewer"))).To(ContainSubstring("web.v3"))
		}, timeout, interval).Should(Succeed())
	})
}

// manifestDeployment finds the Deployment named name in a rendered
// manifest.
func manifestDeployment(manifest, name string) *appsv1.Deployment {
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			Expect(err.Error()).To(Equal("EOF"), "no Deployment %s in the manifest:\n%s", name, manifest)
			return nil
		}
		if doc["kind"] != "Deployment" {
			continue
		}
		raw, err := yaml.Marshal(doc)
		Expect(err).NotTo(HaveOccurred())
		d := &appsv1.Deployment{}
		Expect(yaml.Unmarshal(raw, d)).To(Succeed())
		if d.Name == name {
			return d
		}
	}
}

// createClusterRoleBinding grants user the rule cluster-wide, through a
// ClusterRole named role.
func createClusterRoleBinding(t *testing.T, user, role string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{rule}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	Expect(k8sClient.Create(ctx, cr)).To(Succeed())
	Expect(k8sClient.Create(ctx, crb)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, crb)
		_ = k8sClient.Delete(ctx, cr)
	})
}

// TestLiveAPIStoredBackups backs up an Echo to a real S3 server, then, in
// a namespace that has never seen it, lists the bucket through an
// EchoBackupLocation with kubectl and restores the listed backup by name:
// disaster recovery as docs/backup-restore.md tells it.
func TestLiveAPIStoredBackups(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	s3 := s3server.StartAt(t, storageHost, "echo-backups")
	storage := s3.Storage("echo-backups", "dr")

	// A backup of a journal a real echo server wrote.
	source := newRestrictedNamespace(t)
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(source))).To(Succeed())
	data, journal := journaledEcho(t, types.NamespacedName{Namespace: source, Name: "journal"}, "")
	backup := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: source, Name: "nightly.1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: "journal", Storage: storage}}
	Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	runMoverForJob(t, waitJobNamed(t, source, "nightly.1-backup"), data, s3)
	backup = waitBackupComplete(t, client.ObjectKeyFromObject(backup))

	// A namespace with only the credentials and a location.
	dr := newRestrictedNamespace(t)
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(dr))).To(Succeed())
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: dr, Name: "offsite"},
		Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *storage.S3},
	})).To(Succeed())
	listed := "offsite." + source + ".journal.nightly.1"
	d := &docsKubectl{ns: dr, values: map[string]string{"NAME": listed, "LOCATION": "offsite"}}

	t.Run("kubectl lists the backups in the bucket", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			out := d.run(g, documented("get", "storedbackups"))
			g.Expect(out).To(MatchRegexp(`(?m)^NAME\s+ECHO\s+SIZE\s+FILES\s+VERIFIED\s+AGE$`))
			g.Expect(out).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(listed) + `\s+` + regexp.QuoteMeta(source) + `/journal\s+\S+\s+1\s+true\s+\S+$`))
		}, timeout, interval).Should(Succeed())
		wide := d.run(Default, documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION", "-o", "wide"))
		Expect(wide).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(listed) + `\s+.*\s+offsite\s+` + regexp.QuoteMeta(source+"/journal/nightly.1") + `\s+1\s*$`))

		out := d.run(Default, documented("get", "storedbackup", "NAME", "-o", "yaml"))
		sb := &livev1alpha1.StoredBackup{}
		Expect(yaml.Unmarshal([]byte(out), sb)).To(Succeed())
		Expect(sb.Key).To(Equal(source + "/journal/nightly.1"))
		Expect(sb.Source).To(Equal(livev1alpha1.StoredBackupSource{Namespace: source, Name: "journal", Backup: "nightly.1"}))
		Expect(sb.Size).To(Equal(backup.Status.Size))
		Expect(sb.Files).To(Equal(1))
		Expect(sb.FormatVersion).To(Equal(1))
		Expect(sb.Verified).To(BeTrue(), sb.Message)
		Expect(d.run(Default, documented("explain", "storedbackups"))).To(ContainSubstring("backup artifact found in the storage"))
		Expect(d.run(Default, documented("explain", "storedbackups.verified"))).To(ContainSubstring("manifest"))
	})

	t.Run("an unreachable storage is a warning of the list, and fails a list of its location", func(t *testing.T) {
		RegisterTestingT(t)
		// A port where nothing listens, on the address the policy allows.
		down := storage.S3.DeepCopy()
		down.Endpoint = "http://" + closedAddr(storageHost)
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: dr, Name: "down"},
			Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *down},
		})).To(Succeed())
		// The other location is listed, with a warning for this one.
		Eventually(func(g Gomega) {
			out := d.run(g, documented("get", "storedbackups"))
			g.Expect(out).To(ContainSubstring("Warning: EchoBackupLocation " + dr + "/down: "))
			g.Expect(out).To(ContainSubstring(listed))
			g.Expect(out).NotTo(ContainSubstring(s3.SecretKey))
		}, timeout, interval).Should(Succeed())
		alone := &docsKubectl{ns: dr, values: map[string]string{"LOCATION": "down"}}
		out, err := alone.output(documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("(ServiceUnavailable)"))
		Expect(out).To(ContainSubstring("EchoBackupLocation " + dr + "/down: the storage could not be reached (no connection, no answer in time, or a TLS certificate that is not trusted)"))
		Expect(out).NotTo(ContainSubstring(s3.SecretKey))
	})

	t.Run("only users who may read EchoBackups see them", func(t *testing.T) {
		RegisterTestingT(t)
		createClusterRoleBinding(t, "backup-lister", "live-storedbackups-lister", rbacv1.PolicyRule{
			APIGroups: []string{livev1alpha1.GroupName}, Resources: []string{livev1alpha1.StoredBackupResource}, Verbs: []string{"get", "list"},
		})
		Eventually(func(g Gomega) {
			out, err := d.output(documented("get", "storedbackup", "NAME", "--as=backup-lister"))
			g.Expect(err).To(HaveOccurred())
			g.Expect(out).To(ContainSubstring(`needs the right to get echobackups.echo.dev in namespace "` + dr + `"`))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a restore from the listed name brings the data back", func(t *testing.T) {
		RegisterTestingT(t)
		restore := &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: dr, Name: "recover"},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{StoredBackup: listed}},
		}
		Expect(k8sClient.Create(ctx, restore)).To(Succeed())
		expectRestored(t, s3, dr, "recover", "journal", journal)
		Eventually(func(g Gomega) {
			rs := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(restore), rs)).To(Succeed())
			g.Expect(meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)).To(BeNil(), "%s", rs.Status.Error)
			g.Expect(meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete)).To(BeTrue())
			g.Expect(rs.Status.EchoName).To(Equal("journal"))
			g.Expect(rs.Status.RestoredFrom).To(HaveSuffix("/dr/" + source + "/journal/nightly.1"))
		}, timeout, interval).Should(Succeed())
	})
}

// closedAddr is an address on host, a loopback address, where nothing
// listens.
func closedAddr(host string) string {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}
