package controllers_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// An operator killed in the middle of a Helm install or upgrade leaves the
// release pending-install or pending-upgrade, and Helm refuses every later
// operation on it. These tests leave a release in exactly that state, as a
// SIGKILL would, and check that the operator converges all the same.

// releaseStorage is the release storage of a namespace as an operator
// process sees it: records are signed with the operator's key, which an
// earlier process (the one that was killed) shared.
func releaseStorage(ns string) *storage.Storage {
	signer, err := releasetrust.LoadOrCreateSigner(context.Background(), k8sClient, testOperatorNamespace)
	if err != nil {
		panic(err)
	}
	return storage.Init(driver.NewSecrets(signer.SecretClient(clientset.CoreV1().Secrets(ns), ns)))
}

func TestEchoRecoversAReleaseLeftPendingInstall(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "interrupted"}

	ch, err := loader.Load(filepath.Join("..", "helm-charts", "echo"))
	Expect(err).NotTo(HaveOccurred())
	now := helmtime.Now()
	Expect(releaseStorage(ns).Create(&release.Release{
		Name: key.Name, Namespace: ns, Version: 1, Chart: ch, Config: map[string]any{},
		Info: &release.Info{Status: release.StatusPendingInstall, FirstDeployed: now, LastDeployed: now, Description: "Install started"},
	})).To(Succeed())

	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)

	last, err := releaseStorage(ns).Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(last.Info.Status).To(Equal(release.StatusDeployed))
	Expect(last.Version).To(Equal(2), "the release was upgraded over the interrupted install")
	first, err := releaseStorage(ns).Get(key.Name, 1)
	Expect(err).NotTo(HaveOccurred())
	Expect(first.Info.Status.IsPending()).To(BeFalse())
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
		Should(ContainElement(echov1alpha1.EventReasonReleaseRecovered))
}

func TestEchoRecoversAReleaseLeftPendingUpgrade(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "interrupted"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)

	// Hold the reconciler off while the release is doctored.
	pauseEcho(t, key)
	Eventually(func(g Gomega) string { return readyCondition(getEcho(g, key)).Reason }, timeout, interval).
		Should(Equal(echov1alpha1.EchoReasonPaused))

	st := releaseStorage(ns)
	deployed, err := st.Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	pending := *deployed
	pending.Version = deployed.Version + 1
	pending.Info = &release.Info{Status: release.StatusPendingUpgrade, LastDeployed: helmtime.Now(), Description: "Upgrade started"}
	Expect(st.Create(&pending)).To(Succeed())

	resumeWithAChange(t, key)

	history, err := st.History(key.Name)
	Expect(err).NotTo(HaveOccurred())
	for _, r := range history {
		Expect(r.Info.Status.IsPending()).To(BeFalse(), "revision %d is %s", r.Version, r.Info.Status)
	}
	last, err := st.Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(last.Info.Status).To(Equal(release.StatusDeployed))
	Expect(last.Version).To(BeNumerically(">", pending.Version))
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
		Should(ContainElement(echov1alpha1.EventReasonReleaseRecovered))
}

// An install or upgrade writes its revision's record once, in its final
// state, after applying the objects (see internal/helmreconciler
// recordwrites.go): an operator killed in between leaves objects and no
// record of them. These tests leave a release in that state.

// releaseObjectUIDs are the UIDs of the Deployment and Service of an
// Echo's release, which carry Helm's ownership metadata.
func releaseObjectUIDs(t *testing.T, key types.NamespacedName) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for kind, obj := range map[string]client.Object{"Deployment": &appsv1.Deployment{}, "Service": &corev1.Service{}} {
		Expect(k8sClient.Get(context.Background(), key, obj)).To(Succeed())
		Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"), kind)
		Expect(obj.GetAnnotations()).To(HaveKeyWithValue("meta.helm.sh/release-name", key.Name), kind)
		Expect(obj.GetAnnotations()).To(HaveKeyWithValue("meta.helm.sh/release-namespace", key.Namespace), kind)
		out[kind] = obj.GetUID()
	}
	return out
}

// pausedReadyEcho rolls out a new Echo, pauses its release reconciler and
// returns its key, the UIDs of its release's objects and its release
// storage, for a test to leave the release as an interrupted operation
// would.
func pausedReadyEcho(t *testing.T) (types.NamespacedName, map[string]types.UID, *storage.Storage) {
	t.Helper()
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "interrupted"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)
	uids := releaseObjectUIDs(t, key)
	pauseEcho(t, key)
	return key, uids, releaseStorage(ns)
}

// resumeWithAChange lifts the pause of an Echo with a change of its spec,
// and waits for the change to be rolled out.
func resumeWithAChange(t *testing.T, key types.NamespacedName) {
	t.Helper()
	updateEcho(t, key, func(e *echov1alpha1.Echo) {
		e.Annotations = nil
		e.Spec.Message = "after the crash"
	})
	e := rollOut(t, key)
	d := getDeployment(t, key, e.Generation)
	Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "after the crash"}))
}

func TestEchoAdoptsTheObjectsOfAnInstallLeftWithoutARecord(t *testing.T) {
	RegisterTestingT(t)
	// Leave the objects without a record, as a process killed before
	// writing its deployed record would.
	key, uids, st := pausedReadyEcho(t)
	history, err := st.History(key.Name)
	Expect(err).NotTo(HaveOccurred())
	for _, r := range history {
		_, err := st.Delete(r.Name, r.Version)
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() error { _, err := st.History(key.Name); return err }, timeout, interval).Should(MatchError(driver.ErrReleaseNotFound))

	updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Annotations = nil })
	Eventually(func(g Gomega) {
		last, err := st.Last(key.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Info.Status).To(Equal(release.StatusDeployed))
		g.Expect(last.Version).To(Equal(1), "the release was installed again, over its objects")
	}, timeout, interval).Should(Succeed())
	waitReady(t, key)
	Expect(releaseObjectUIDs(t, key)).To(Equal(uids), "the objects were adopted, not recreated")
}

func TestEchoUpgradesOverAnUpgradeLeftWithoutADeployedRecord(t *testing.T) {
	RegisterTestingT(t)
	// Leave the deployed revision superseded with no revision after it,
	// as a process killed between the two record writes of an upgrade
	// would.
	key, uids, st := pausedReadyEcho(t)
	deployed, err := st.Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(deployed.Info.Status).To(Equal(release.StatusDeployed))
	deployed.Info.Status = release.StatusSuperseded
	Expect(st.Update(deployed)).To(Succeed())

	resumeWithAChange(t, key)

	last, err := st.Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(last.Info.Status).To(Equal(release.StatusDeployed))
	Expect(last.Version).To(Equal(deployed.Version + 1))
	previous, err := st.Get(key.Name, deployed.Version)
	Expect(err).NotTo(HaveOccurred())
	Expect(previous.Info.Status).To(Equal(release.StatusSuperseded))
	Expect(releaseObjectUIDs(t, key)).To(Equal(uids), "the objects were upgraded in place")
}
