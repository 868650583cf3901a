//go:build linux

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/test/harness/upgradechart"
)

// upgradeEchoes is how many Echoes are in place while the operator is
// upgraded.
const upgradeEchoes = 50

// upgradedVersion is the version the operator is upgraded to.
const upgradedVersion = "0.2.0"

// releaseRecord is what the test compares of a release Secret.
type releaseRecord struct {
	release, version, status, fingerprint string
}

// deploymentState is what changes when a Deployment rolls its pods.
type deploymentState struct {
	generation int64
	template   string
}

// The operator is replaced by a new version with 50 Echoes in place. With
// the same chart (only its appVersion moves, as in every release) the new
// operator writes no revision and leaves every Deployment as it was: no
// pod restarts. With a changed chart (its version bumped and a template
// change that reaches the pods) every Echo is upgraded to revision 2
// exactly once and is Ready again.
func TestOperatorUpgradeWithEchoesInPlace(t *testing.T) {
	RegisterTestingT(t)
	ns := newRestrictedNamespace(t)
	names := make([]string, upgradeEchoes)
	for i := range names {
		names[i] = fmt.Sprintf("up-%02d", i)
		Expect(k8sClient.Create(context.Background(), &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]},
			Spec:       echov1alpha1.EchoSpec{Message: "in place"},
		})).To(Succeed())
	}
	for _, name := range names {
		waitReady(t, types.NamespacedName{Namespace: ns, Name: name}, 1)
	}
	// The Echoes leave with their namespace before the suite's operator
	// comes back with the repository's chart.
	t.Cleanup(func() {
		deleteNamespaceAndWait(ns)
		Expect(op.restartWith()).To(Succeed())
	})
	records := releaseRecords(t, ns)
	Expect(records).To(HaveLen(upgradeEchoes))
	deployments := deploymentStates(t, ns)
	Expect(deployments).To(HaveLen(upgradeEchoes))
	dir := t.TempDir()

	t.Run("same chart: no revision, no rollout", func(t *testing.T) {
		watches, err := upgradechart.Write(repoRoot, filepath.Join(dir, "same"), upgradechart.Options{AppVersion: upgradedVersion})
		Expect(err).NotTo(HaveOccurred())
		Expect(op.restartWith("OPERATOR_VERSION="+upgradedVersion, "WATCHES_FILE="+watches)).To(Succeed())

		// The chart's appVersion is part of the fingerprint: the new
		// operator renders every release once, finds the manifest
		// unchanged and labels the revision with the new fingerprint.
		Eventually(func(g Gomega) {
			now := releaseRecords(t, ns)
			g.Expect(now).To(HaveLen(len(records)), "no release record added or removed")
			for name, r := range now {
				before := records[name]
				g.Expect(r.version).To(Equal(before.version), "release record %s", name)
				g.Expect(r.fingerprint).NotTo(Equal(before.fingerprint), "release record %s is still the old chart's", name)
			}
		}, timeout, interval).Should(Succeed())
		Expect(deploymentStates(t, ns)).To(Equal(deployments), "no Deployment changed: no pod restarted")
		for _, r := range releaseRecords(t, ns) {
			Expect(r.version).To(Equal("1"))
			Expect(r.status).To(Equal("deployed"))
		}
	})

	t.Run("changed chart: revision 2 exactly once", func(t *testing.T) {
		watches, err := upgradechart.Write(repoRoot, filepath.Join(dir, "changed"),
			upgradechart.Options{AppVersion: upgradedVersion, Version: upgradedVersion, ChangeTemplate: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(op.restartWith("OPERATOR_VERSION="+upgradedVersion, "WATCHES_FILE="+watches)).To(Succeed())

		for _, name := range names {
			key := types.NamespacedName{Namespace: ns, Name: name}
			Eventually(func(g Gomega) string {
				d := &appsv1.Deployment{}
				g.Expect(k8sClient.Get(context.Background(), key, d)).To(Succeed())
				return d.Spec.Template.Annotations[upgradechart.ChangedAnnotation]
			}, timeout, interval).Should(Equal(upgradedVersion), "Echo %s was not upgraded", name)
			waitReady(t, key, 1)
		}
		now := deploymentStates(t, ns)
		for name, d := range now {
			Expect(d.generation).To(Equal(deployments[name].generation+1), "Deployment %s was written once", name)
		}
		revisions := map[string][]string{}
		for _, r := range releaseRecords(t, ns) {
			revisions[r.release] = append(revisions[r.release], r.version+" "+r.status)
		}
		Expect(revisions).To(HaveLen(upgradeEchoes))
		for release, got := range revisions {
			Expect(got).To(ConsistOf("1 superseded", "2 deployed"), "revisions of release %s", release)
		}
	})
}

// releaseRecords are the release Secrets of ns, by name.
func releaseRecords(t *testing.T, ns string) map[string]releaseRecord {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabelsSelector{Selector: chart.ReleaseRecordSelector()})).To(Succeed())
	out := make(map[string]releaseRecord, len(list.Items))
	for _, s := range list.Items {
		l := s.Labels
		out[s.Name] = releaseRecord{release: l[chart.ReleaseNameLabel], version: l[chart.ReleaseVersionLabel],
			status: l[chart.ReleaseStatusLabel], fingerprint: l[releaserecords.FingerprintLabel]}
	}
	return out
}

// deploymentStates are the generation and pod template of every
// Deployment of ns, by name.
func deploymentStates(t *testing.T, ns string) map[string]deploymentState {
	t.Helper()
	list := &appsv1.DeploymentList{}
	Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	out := make(map[string]deploymentState, len(list.Items))
	for _, d := range list.Items {
		raw, err := json.Marshal(d.Spec.Template)
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(raw)
		out[d.Name] = deploymentState{generation: d.Generation, template: hex.EncodeToString(sum[:])}
	}
	return out
}
