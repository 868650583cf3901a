package chart

import (
	"k8s.io/apimachinery/pkg/labels"
)

// The contract between the echo chart (helm-charts/echo) and the operator's
// Go side: how the chart names and labels what it renders, and how Helm's
// Secrets storage driver labels the release records. The operator finds the
// Echo's pods and data claim, caches the chart's objects and reads release
// records by these names; contract_test.go renders the chart and stores a
// release with Helm's own driver to check both sides agree.

// Name is the chart's name (Chart.yaml), the value of NameLabel on every
// object it renders ("echo.name" in _helpers.tpl).
const Name = "echo"

// The Kubernetes recommended labels the chart sets, and the operator sets on
// the objects it creates itself.
const (
	NameLabel      = "app.kubernetes.io/name"
	InstanceLabel  = "app.kubernetes.io/instance"
	ComponentLabel = "app.kubernetes.io/component"
	ManagedByLabel = "app.kubernetes.io/managed-by"
)

// dataClaimSuffix ends the name of an Echo's data claim ("echo.pvcName").
const dataClaimSuffix = "-data"

// ReleaseName is the name of an Echo's Helm release: the Echo's own name
// (the helm-operator-plugins reconciler names releases after their object).
// Every object the chart renders is named after it ("echo.fullname").
func ReleaseName(echoName string) string { return echoName }

// DataClaimName is the name of the PersistentVolumeClaim holding an Echo's
// data directory when persistence is enabled.
func DataClaimName(echoName string) string { return ReleaseName(echoName) + dataClaimSuffix }

// Helm's ownership annotations, which it sets on every object it creates
// for a release and checks before it adopts an existing one.
const (
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// OwnedByRelease reports whether annotations are those Helm gives the
// objects of release releaseName in namespace.
func OwnedByRelease(annotations map[string]string, namespace, releaseName string) bool {
	return annotations[ReleaseNameAnnotation] == releaseName && annotations[ReleaseNamespaceAnnotation] == namespace
}

// SelectorLabels select the pods of one Echo ("echo.selectorLabels"); they
// never change over the release's life.
func SelectorLabels(echoName string) map[string]string {
	return map[string]string{NameLabel: Name, InstanceLabel: ReleaseName(echoName)}
}

// ObjectSelector selects every object the chart renders, of every Echo.
func ObjectSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{NameLabel: Name})
}

// Helm's Secrets storage driver labels every release record with these, and
// gives it ReleaseSecretType.
const (
	ReleaseOwnerLabel   = "owner"
	ReleaseOwner        = "helm"
	ReleaseNameLabel    = "name"
	ReleaseStatusLabel  = "status"
	ReleaseVersionLabel = "version"

	ReleaseSecretType = "helm.sh/release.v1"
)

// ReleaseRecordLabels select the release records of one release.
func ReleaseRecordLabels(releaseName string) map[string]string {
	return map[string]string{ReleaseOwnerLabel: ReleaseOwner, ReleaseNameLabel: releaseName}
}

// ReleaseRecordSelector selects every release record Helm writes.
func ReleaseRecordSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{ReleaseOwnerLabel: ReleaseOwner})
}
