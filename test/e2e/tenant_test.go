//go:build linux

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/cmd/manager/app"
	echochart "github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/test/harness/olderschema"
)

// The hostile-tenant suite plays a team that can only edit its own
// namespace, through the built-in edit role to which the Echo roles
// aggregate, and tries to make the operator act outside it. After every
// attack nothing outside the namespace has changed, the operator is still
// running, and it keeps serving the other namespaces.

// tenant is a namespace user with the edit role there and nothing else.
type tenant struct {
	ns string
	c  client.Client
}

// newTenant creates a namespace and a user bound to the edit role in it,
// and returns a client that acts as that user.
func newTenant(t *testing.T) tenant {
	t.Helper()
	return tenantOf(t, newRestrictedNamespace(t))
}

// tenantOf binds a user to the edit role in namespace ns, and returns a
// client that acts as that user.
func tenantOf(t *testing.T, ns string) tenant {
	t.Helper()
	ctx := context.Background()
	user := tenantUser(ns)
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
	c, err := client.New(impersonating(user), client.Options{Scheme: app.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	// The Echo roles reach edit through kube-controller-manager's
	// aggregation.
	Eventually(func(g Gomega) {
		for _, resource := range []string{"echoes", "echobackups", "echobackupschedules", "echorestores"} {
			g.Expect(allowed(user, ns, "create", "echo.dev", resource)).To(BeTrue(), "the edit role does not grant %s yet", resource)
		}
	}, timeout, interval).Should(Succeed())
	return tenant{ns: ns, c: c}
}

// tenantUser is the user tenantOf binds in ns.
func tenantUser(ns string) string { return "tenant-of-" + ns }

// impersonating is the suite's configuration acting as an authenticated
// user.
func impersonating(user string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return c
}

// allowed asks the API server whether user may do verb on a resource.
func allowed(user, ns, verb, group, resource string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: group, Resource: resource,
		},
	}}
	if err := k8sClient.Create(context.Background(), sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// installUserRoles installs the Echo roles that aggregate into the
// built-in admin, edit and view roles, as `make deploy` and OLM do.
func installUserRoles(t *testing.T) {
	t.Helper()
	for _, f := range []string{"echo_admin_role.yaml", "echo_editor_role.yaml", "echo_viewer_role.yaml"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", f))
		Expect(err).NotTo(HaveOccurred())
		role := &rbacv1.ClusterRole{}
		Expect(yaml.Unmarshal(raw, role)).To(Succeed())
		if err := k8sClient.Create(context.Background(), role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// forgedRelease is a Secret laid out as Helm stores a release, written by
// someone other than the operator.
func forgedRelease(echo *echov1alpha1.Echo, secretName string, version int, encoded []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: echo.Namespace, Name: secretName,
			Labels: map[string]string{
				echochart.ReleaseOwnerLabel: echochart.ReleaseOwner, echochart.ReleaseNameLabel: echochart.ReleaseName(echo.Name),
				echochart.ReleaseStatusLabel: "deployed", echochart.ReleaseVersionLabel: strconv.Itoa(version),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: echov1alpha1.GroupVersion.String(), Kind: "Echo", Name: echo.Name, UID: echo.UID, Controller: ptr.To(true),
			}},
		},
		Type: echochart.ReleaseSecretType,
		Data: map[string][]byte{releasetrust.ReleaseDataKey: encoded},
	}
}

// encodeRelease stores a release as Helm's Secrets driver does: base64 of
// gzipped JSON.
func encodeRelease(rel *release.Release) []byte {
	raw, err := json.Marshal(rel)
	Expect(err).NotTo(HaveOccurred())
	return gzipBase64(raw)
}

func gzipBase64(raw []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	Expect(err).NotTo(HaveOccurred())
	_, err = zw.Write(raw)
	Expect(err).NotTo(HaveOccurred())
	Expect(zw.Close()).To(Succeed())
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// hostileManifest lists what a tenant must never get created or deleted
// through the operator: objects in other namespaces (one of them an
// administrator's, which an upgrade over this "previous revision" would
// delete), a cluster-scoped binding to cluster-admin, and a kind the chart
// does not render.
func hostileManifest(tenantNS, victimNS, adminConfigMap string) string {
	docs := []string{
		fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pwned\n  namespace: %s\ndata:\n  by: tenant\n", victimNS),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pwned\n  namespace: kube-system\ndata:\n  by: tenant\n",
		fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", adminConfigMap, victimNS),
		fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwned\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: User\n  name: tenant-of-%s\n", tenantNS),
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pwned\ndata:\n  by: tenant\n",
	}
	var b strings.Builder
	for i, d := range docs {
		fmt.Fprintf(&b, "---\n# Source: echo/templates/forged-%d.yaml\n%s", i, d)
	}
	return b.String()
}

// expectNotCreated checks that none of the hostile manifest's objects exists.
func expectNotCreated(g Gomega, tenantNS, victimNS string) {
	ctx := context.Background()
	for _, ns := range []string{victimNS, "kube-system", tenantNS} {
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pwned"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s/pwned exists (err %v)", ns, err)
	}
	err := k8sClient.Get(ctx, types.NamespacedName{Name: "pwned"}, &rbacv1.ClusterRoleBinding{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ClusterRoleBinding pwned exists (err %v)", err)
}

// expectUntrusted waits until the Echo names secretName among its release
// records that did not verify, with an Event saying so.
func expectUntrusted(t *testing.T, key types.NamespacedName, secretName string) {
	t.Helper()
	Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getEcho(g, key).Status.Conditions, echov1alpha1.EchoConditionReleaseRecordsVerified)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(echov1alpha1.EchoReasonUntrustedRecords))
		g.Expect(c.Message).To(ContainSubstring(secretName))
		g.Expect(eventMessages(g, key, echov1alpha1.EventReasonUntrustedReleaseRecords)).To(ContainElement(ContainSubstring(secretName)))
	}, timeout, interval).Should(Succeed())
}

// expectVerified waits until every release record of the Echo verifies.
func expectVerified(t *testing.T, key types.NamespacedName) {
	t.Helper()
	Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getEcho(g, key).Status.Conditions, echov1alpha1.EchoConditionReleaseRecordsVerified)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, timeout, interval).Should(Succeed())
}

// eventMessages lists the notes of the events.k8s.io/v1 Events of one
// reason recorded on the object key names.
func eventMessages(g Gomega, key types.NamespacedName, reason string) []string {
	events, err := clientset.EventsV1().Events(key.Namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: "regarding.name=" + key.Name + ",reason=" + reason,
	})
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range events.Items {
		out = append(out, e.Note)
	}
	return out
}

// latestSignedRelease reads the newest release Secret the operator wrote
// for an Echo.
func latestSignedRelease(g Gomega, key types.NamespacedName) *corev1.Secret {
	secrets := &corev1.SecretList{}
	g.Expect(k8sClient.List(context.Background(), secrets, client.InNamespace(key.Namespace),
		client.MatchingLabels(echochart.ReleaseRecordLabels(echochart.ReleaseName(key.Name))))).To(Succeed())
	var latest *corev1.Secret
	latestVersion := 0
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if s.Annotations[releasetrust.SignatureAnnotation] == "" {
			continue
		}
		// Revisions compare as numbers: revision 10 follows 9.
		version, err := strconv.Atoi(s.Labels[echochart.ReleaseVersionLabel])
		g.Expect(err).NotTo(HaveOccurred(), "the version label of %s", s.Name)
		if latest == nil || version > latestVersion {
			latest, latestVersion = s, version
		}
	}
	g.Expect(latest).NotTo(BeNil(), "no signed release of %s", key)
	return latest
}

// releaseRecordsOf describes the release records of the Echo, for a
// failure to explain: name, revision, status, whether signed, and the
// Echo's conditions.
func releaseRecordsOf(key types.NamespacedName) string {
	secrets := &corev1.SecretList{}
	if err := k8sClient.List(context.Background(), secrets, client.InNamespace(key.Namespace),
		client.MatchingLabels(echochart.ReleaseRecordLabels(echochart.ReleaseName(key.Name)))); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, s := range secrets.Items {
		fmt.Fprintf(&b, "%s revision %s status %s signed %t\n", s.Name, s.Labels[echochart.ReleaseVersionLabel],
			s.Labels["status"], s.Annotations[releasetrust.SignatureAnnotation] != "")
	}
	e := &echov1alpha1.Echo{}
	if err := k8sClient.Get(context.Background(), key, e); err == nil {
		fmt.Fprintf(&b, "generation %d, conditions %+v\n", e.Generation, e.Status.Conditions)
	}
	return b.String()
}

// recreatedService deletes an Echo's Service, as the tenant may, and waits
// for drift repair to create it again: proof that the release was
// reconciled after the attack, from records the operator trusts.
func recreatedService(t *testing.T, tn tenant, key types.NamespacedName) {
	t.Helper()
	svc := &corev1.Service{}
	Expect(tn.c.Get(context.Background(), key, svc)).To(Succeed())
	Expect(tn.c.Delete(context.Background(), svc)).To(Succeed())
	Eventually(func(g Gomega) {
		now := &corev1.Service{}
		g.Expect(k8sClient.Get(context.Background(), key, now)).To(Succeed())
		g.Expect(now.UID).NotTo(Equal(svc.UID))
	}, timeout, interval).Should(Succeed())
}

// peakRSS reads the operator process's peak resident set size in KiB.
func peakRSS(g Gomega) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", op.pid()))
	g.Expect(err).NotTo(HaveOccurred(), "the operator is not running")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			g.Expect(err).NotTo(HaveOccurred())
			return kib
		}
	}
	g.Expect("VmHWM").To(BeEmpty(), "no VmHWM in /proc/PID/status")
	return 0
}

func TestHostileTenantStaysInItsNamespace(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)

	// The victim: another team's Echo and an administrator's ConfigMap.
	victimNS := newRestrictedNamespace(t)
	adminCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victimNS, Name: "admin-config"}, Data: map[string]string{"keep": "me"}}
	Expect(k8sClient.Create(ctx, adminCM)).To(Succeed())
	victimKey := types.NamespacedName{Namespace: victimNS, Name: "prod"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: victimNS, Name: "prod"}})).To(Succeed())
	victim := waitReady(t, victimKey, 1)

	tn := newTenant(t)
	webKey := types.NamespacedName{Namespace: tn.ns, Name: "web"}
	Expect(tn.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "web"}})).To(Succeed())
	web := waitReady(t, webKey, 1)
	expectVerified(t, webKey)
	// Each attack fails on its own; the checks after them run as the
	// parent test.
	run := func(name string, attack func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			RegisterTestingT(t)
			attack(t)
		})
		RegisterTestingT(t)
	}

	run("a forged release record is never acted on, on repair or upgrade", func(t *testing.T) {
		forged := forgedRelease(web, "sh.helm.release.v1.web.v9", 9, encodeRelease(&release.Release{
			Name: "web", Namespace: tn.ns, Version: 9,
			Info:     &release.Info{Status: release.StatusDeployed},
			Chart:    &chart.Chart{Metadata: &chart.Metadata{Name: echochart.Name, Version: "0.1.0"}},
			Manifest: hostileManifest(tn.ns, victimNS, adminCM.Name),
		}))
		Expect(tn.c.Create(ctx, forged)).To(Succeed())
		expectUntrusted(t, webKey, forged.Name)
		recreatedService(t, tn, webKey)
		// An upgrade over the forged "previous revision" would delete the
		// administrator's ConfigMap it lists.
		updateEcho(t, webKey, func(e *echov1alpha1.Echo) { e.Spec.Message = "upgraded" })
		waitReady(t, webKey, 1)
		expectNotCreated(Default, tn.ns, victimNS)
		Expect(tn.c.Delete(ctx, forged)).To(Succeed())
		expectVerified(t, webKey)
	})

	run("a tampered record in the way of the next revision blocks only this Echo, until it is deleted", func(t *testing.T) {
		// The record to tamper with is the revision of the Echo's spec,
		// deployed: with an upgrade still to come, that one would write
		// the next revision past the tampered record instead.
		var genuine *corev1.Secret
		rel := &release.Release{}
		Eventually(func(g Gomega) {
			genuine = latestSignedRelease(g, webKey)
			g.Expect(releaserecords.Decode(genuine.Data["release"], rel)).To(Succeed())
			g.Expect(rel.Info.Status).To(Equal(release.StatusDeployed))
			g.Expect(rel.Config).To(HaveKeyWithValue("message", "upgraded"))
		}, timeout, interval).Should(Succeed())
		rel.Manifest += hostileManifest(tn.ns, victimNS, adminCM.Name)
		genuine.Data["release"] = encodeRelease(rel)
		Expect(tn.c.Update(ctx, genuine)).To(Succeed(), "the tenant may edit Secrets in its namespace")
		expectUntrusted(t, webKey, genuine.Name)

		updateEcho(t, webKey, func(e *echov1alpha1.Echo) { e.Spec.Message = "upgraded again" })
		// The upgrade stops at the tampered record, in the way of the
		// revision it would write, before it applies anything: the
		// operator's cache showed the record untrusted already
		// (expectUntrusted). Nothing is written past it, and the tampered
		// content is never acted on (expectNotCreated).
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getEcho(g, webKey).Status.Conditions, echov1alpha1.EchoConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.EchoReasonReleaseFailed))
			g.Expect(c.Message).To(ContainSubstring("is in the way"))
		}, timeout, interval).Should(Succeed(), func() string { return releaseRecordsOf(webKey) })
		Expect(latestSignedRelease(Default, webKey).Name).To(Equal(genuine.Name), releaseRecordsOf(webKey))
		dep := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, webKey, dep)).To(Succeed())
		Expect(dep.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "upgraded"}),
			"the stopped upgrade applied nothing")
		expectNotCreated(Default, tn.ns, victimNS)

		Expect(tn.c.Delete(ctx, genuine)).To(Succeed())
		waitReady(t, webKey, 1)
		expectVerified(t, webKey)
	})

	run("a gzip bomb in a release record is never decompressed", func(t *testing.T) {
		before := peakRSS(Default)
		// 256 MiB of zeros, four times what the operator would ever
		// decompress, in about 350 KiB.
		bomb := forgedRelease(web, "bomb", 30, gzipBase64(make([]byte, 256<<20)))
		Expect(tn.c.Create(ctx, bomb)).To(Succeed())
		expectUntrusted(t, webKey, bomb.Name)
		recreatedService(t, tn, webKey)
		Expect(peakRSS(Default)-before).To(BeNumerically("<", 32<<10), "the operator's peak RSS grew by more than 32 MiB")
		Expect(tn.c.Delete(ctx, bomb)).To(Succeed())
	})

	run("a genuine record relabelled for another Echo is not trusted for it", func(t *testing.T) {
		apiKey := types.NamespacedName{Namespace: tn.ns, Name: "api"}
		Expect(tn.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "api"}})).To(Succeed())
		api := waitReady(t, apiKey, 1)
		copied := latestSignedRelease(Default, webKey)
		moved := forgedRelease(api, "sh.helm.release.v1.api.v40", 40, copied.Data["release"])
		moved.Annotations = copied.Annotations
		Expect(tn.c.Create(ctx, moved)).To(Succeed())
		expectUntrusted(t, apiKey, moved.Name)
		recreatedService(t, tn, apiKey)
		Expect(tn.c.Delete(ctx, moved)).To(Succeed())
	})

	run("a deleted Echo's record replayed under a new Echo of the same name is not trusted", func(t *testing.T) {
		oldKey := types.NamespacedName{Namespace: tn.ns, Name: "reborn"}
		Expect(tn.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: oldKey.Name}})).To(Succeed())
		waitReady(t, oldKey, 1)
		updateEcho(t, oldKey, func(e *echov1alpha1.Echo) { e.Spec.Message = "second revision" })
		Eventually(func(g Gomega) string {
			return latestSignedRelease(g, oldKey).Labels[echochart.ReleaseVersionLabel]
		}, timeout, interval).Should(Equal("2"))
		copied := latestSignedRelease(Default, oldKey).DeepCopy()
		Expect(tn.c.Delete(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: oldKey.Name}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, oldKey, &echov1alpha1.Echo{}))
		}, timeout, interval).Should(BeTrue())

		Expect(tn.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: oldKey.Name}})).To(Succeed())
		reborn := waitReady(t, oldKey, 1)
		replayed := forgedRelease(reborn, copied.Name, 2, copied.Data["release"])
		replayed.Labels = copied.Labels
		replayed.Annotations = copied.Annotations
		Expect(tn.c.Create(ctx, replayed)).To(Succeed())
		expectUntrusted(t, oldKey, replayed.Name)
		Expect(tn.c.Delete(ctx, replayed)).To(Succeed())
		expectVerified(t, oldKey)
	})

	run("an owner reference to another namespace's Echo reaches nothing there", func(t *testing.T) {
		decoy := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "prod", Labels: map[string]string{echochart.NameLabel: echochart.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: echov1alpha1.GroupVersion.String(), Kind: "Echo", Name: "prod", UID: victim.UID, Controller: ptr.To(true)}}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
		Expect(tn.c.Create(ctx, decoy)).To(Succeed())
		// The victim's Service is not touched, while the operator goes on
		// reconciling the tenant's Echoes. (The garbage collector deletes
		// the decoy: its owner is not in its namespace.)
		victimSvc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, victimKey, victimSvc)).To(Succeed())
		recreatedService(t, tn, webKey)
		Consistently(func(g Gomega) {
			now := &corev1.Service{}
			g.Expect(k8sClient.Get(ctx, victimKey, now)).To(Succeed())
			g.Expect(now.ResourceVersion).To(Equal(victimSvc.ResourceVersion))
		}, "2s", interval).Should(Succeed())
	})

	run("input that would break the operator is refused at admission", func(t *testing.T) {
		for _, tc := range admissionAttacks {
			err := tn.c.Create(ctx, tc.object(tn.ns))
			Expect(err).To(HaveOccurred(), tc.name)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.name, err)
			Expect(err.Error()).To(ContainSubstring(tc.says), tc.name)
		}
	})

	run("an object stored under a looser schema stops nobody, even across a restart", func(t *testing.T) {
		poison := storeUnderLooserSchema(t, tn.ns)
		// The operator restarts, as after an upgrade or a crash, with the
		// object in place: it comes up and serves everyone.
		op.kill()
		Expect(op.start()).To(Succeed())
		valid := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(scheduleYAML("valid", "168h")), &valid.Object)).To(Succeed())
		valid.SetNamespace(tn.ns)
		Expect(tn.c.Create(ctx, valid)).To(Succeed())
		expectObserved(t, client.ObjectKeyFromObject(valid))
		Eventually(func(g Gomega) {
			g.Expect(eventMessages(g, poison, "UndecodableObject")).To(ContainElement(ContainSubstring("maxAge")))
		}, timeout, interval).Should(Succeed())
		// Once corrected, it is reconciled like any other.
		Expect(tn.c.Patch(ctx, scheduleNamed(poison), client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"retention":{"maxAge":"168h"}}}`)))).To(Succeed())
		expectObserved(t, poison)
	})

	// Nothing outside the namespace changed, and the operator still serves
	// everyone: the victim is Ready, and a new Echo elsewhere comes up.
	expectNotCreated(Default, tn.ns, victimNS)
	now := &corev1.ConfigMap{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(adminCM), now)).To(Succeed())
	Expect(now.ResourceVersion).To(Equal(adminCM.ResourceVersion), "the administrator's ConfigMap changed")
	Expect(waitReady(t, victimKey, 1).Generation).To(Equal(victim.Generation))
	bystanderNS := newRestrictedNamespace(t)
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: bystanderNS, Name: "later"}})).To(Succeed())
	waitReady(t, types.NamespacedName{Namespace: bystanderNS, Name: "later"}, 1)
	Expect(op.unexpectedExits()).To(BeEmpty(), "the operator exited")
}

// admissionAttack is an object the API server must refuse, as a user
// would write it, and what its answer must say.
type admissionAttack struct {
	name string
	yaml string
	says string
}

const s3Storage = `
    s3:
      endpoint: %s
      bucket: backups
      credentialsSecretRef:
        name: %s`

var admissionAttacks = []admissionAttack{
	{"a retention age Go cannot parse", `
kind: EchoBackupSchedule
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  retention: {maxAge: 7d}
  template:
    echoName: web
    storage:` + fmt.Sprintf(strings.ReplaceAll(s3Storage, "\n    ", "\n      "), "https://s3.example.test", "creds"), "168h"},
	{"credentials in an S3 endpoint", `
kind: EchoBackup
metadata: {name: leaky}
spec:
  echoName: web
  storage:` + fmt.Sprintf(s3Storage, "https://AKIA:secret@s3.example.test", "creds"), "credentials"},
	{"a credentials Secret in another namespace", `
kind: EchoBackup
metadata: {name: elsewhere}
spec:
  echoName: web
  storage:` + fmt.Sprintf(s3Storage, "https://s3.example.test", "kube-system/creds"), "credentialsSecretRef"},
	{"a claim in another namespace", `
kind: EchoBackup
metadata: {name: claimed}
spec:
  echoName: web
  storage:
    persistentVolumeClaim: {claimName: victim/data}`, "claimName"},
	{"a schedule every second", `
kind: EchoBackupSchedule
metadata: {name: hammer}
spec:
  schedule: "@every 1s"
  template:
    echoName: web
    storage:` + fmt.Sprintf(strings.ReplaceAll(s3Storage, "\n    ", "\n      "), "https://s3.example.test", "creds"), "@every"},
	{"a backup name too long for a label", `
kind: EchoBackup
metadata: {name: ` + strings.Repeat("b", 64) + `}
spec:
  echoName: web
  storage:` + fmt.Sprintf(s3Storage, "https://s3.example.test", "creds"), "63"},
	{"a quantity that would take hours to parse", `
kind: Echo
metadata: {name: slow}
spec:
  resources:
    requests: {cpu: "1E999999999999"}`, "an exponent has at most 2 digits"},
	{"an oversized message", `
kind: Echo
metadata: {name: big}
spec: {message: ` + strings.Repeat("x", 2000) + `}`, "message"},
	{"pod annotations near etcd's object limit", `
kind: Echo
metadata: {name: annotated}
spec:
  podAnnotations: {` + oversizedAnnotations() + `}`, "podAnnotations hold at most 8192 characters"},
	{"an affinity of many terms", `
kind: Echo
metadata: {name: attracted}
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:` + strings.Repeat(`
      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}`, 8) + `
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 100, podAffinityTerm: {topologyKey: topology.kubernetes.io/zone}}`, "affinity holds at most 8 terms"},
}

// oversizedAnnotations is 64 annotations of 16 KiB each, a flow mapping's
// entries: each within what a Pod may carry, 1 MiB in all.
func oversizedAnnotations() string {
	entries := make([]string, 0, 64)
	for i := range 64 {
		entries = append(entries, fmt.Sprintf("example.test/a%02d: %s", i, strings.Repeat("x", 16<<10)))
	}
	return strings.Join(entries, ", ")
}

// object decodes an attack into an object of the tenant's namespace.
func (a admissionAttack) object(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte("apiVersion: echo.dev/v1alpha1"+a.yaml), &u.Object)).To(Succeed(), a.name)
	u.SetNamespace(ns)
	return u
}

// scheduleYAML is a schedule as a user writes it, with its maxAge.
func scheduleYAML(name, maxAge string) string {
	return fmt.Sprintf(`
apiVersion: echo.dev/v1alpha1
kind: EchoBackupSchedule
metadata: {name: %s}
spec:
  schedule: "0 3 * * *"
  retention: {maxAge: %s}
  template:
    echoName: web
    storage:
      s3:
        endpoint: https://s3.example.test
        bucket: backups
        credentialsSecretRef: {name: creds}
`, name, maxAge)
}

func scheduleNamed(key types.NamespacedName) *echov1alpha1.EchoBackupSchedule {
	return &echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// expectObserved waits until the schedule controller has reconciled the
// current generation of a schedule.
func expectObserved(t *testing.T, key types.NamespacedName) {
	t.Helper()
	Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("EchoBackupSchedule"))
		g.Expect(k8sClient.Get(context.Background(), key, u)).To(Succeed())
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		g.Expect(observed).To(Equal(u.GetGeneration()))
	}, timeout, interval).Should(Succeed())
}

// storeUnderLooserSchema stores a schedule whose maxAge, "7d", no Go
// duration decodes, as an older CRD without today's rules would have
// admitted it, then puts today's CRD back.
func storeUnderLooserSchema(t *testing.T, ns string) types.NamespacedName {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	Expect(k8sClient.Get(ctx, types.NamespacedName{Name: "echobackupschedules.echo.dev"}, crd)).To(Succeed())
	strict, found, err := unstructured.NestedFieldCopy(crd.Object, "spec", "versions")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue())

	versions := strict.([]any)
	loose := olderschema.LooseMaxAge(versions)
	setVersions(ctx, crd.GetName(), loose)

	poison := scheduleYAML("poison", "7d")
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(poison), &u.Object)).To(Succeed())
	u.SetNamespace(ns)
	// The API server takes a moment to serve the new schema.
	Eventually(func() error { return k8sClient.Create(ctx, u.DeepCopy()) }, timeout, interval).Should(Succeed())
	setVersions(ctx, crd.GetName(), versions)
	return types.NamespacedName{Namespace: ns, Name: "poison"}
}

func setVersions(ctx context.Context, name string, versions []any) {
	Eventually(func() error {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := k8sClient.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		return k8sClient.Update(ctx, crd)
	}, timeout, interval).Should(Succeed())
}
