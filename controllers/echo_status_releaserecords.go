package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// untrustedReleaseRecords names, among the cached release Secrets of an
// Echo (releaserecords.CachedRecords: Secrets of its namespace that carry
// Helm's release labels with its name), those that did not verify: the
// operator did not write them, or they were changed since. The Helm
// release reconciler never sees them (see releasetrust); the Echo reports
// them, so that whoever can write Secrets there learns what is ignored and
// why an upgrade may be blocked.
func untrustedReleaseRecords(records []corev1.Secret) []string {
	var names []string
	for i := range records {
		if !releasetrust.CachedVerified(&records[i]) {
			names = append(names, records[i].Name)
		}
	}
	slices.Sort(names)
	return names
}

// maxNamedRecords bounds the names a condition message lists.
const maxNamedRecords = 5

// releaseRecordsCondition reports whether every release record of an Echo
// verified, naming those that did not.
func releaseRecordsCondition(echo *echov1alpha1.Echo, untrusted []string) metav1.Condition {
	c := metav1.Condition{
		Type:               echov1alpha1.EchoConditionReleaseRecordsVerified,
		Status:             metav1.ConditionTrue,
		Reason:             echov1alpha1.EchoReasonRecordsVerified,
		Message:            "Every release record of this Echo was written by echo-operator",
		ObservedGeneration: echo.Generation,
	}
	if len(untrusted) == 0 {
		return c
	}
	named := untrusted
	more := ""
	if len(named) > maxNamedRecords {
		named, more = named[:maxNamedRecords], fmt.Sprintf(" and %d more", len(untrusted)-maxNamedRecords)
	}
	c.Status, c.Reason = metav1.ConditionFalse, echov1alpha1.EchoReasonUntrustedRecords
	c.Message = fmt.Sprintf("Secrets %s%s carry Helm's release labels for this Echo, but echo-operator did not write them "+
		"or they were changed since: they are ignored. Delete them; if one holds the name of the next revision, upgrades wait until it is gone",
		strings.Join(named, ", "), more)
	return c
}

// maxDeployedMessage is the longest message metav1.Condition accepts.
const maxDeployedMessage = 32768

// deployedCondition reports the release's deployed revision, as the Helm
// reconciler reported it before this controller took the condition over
// (so an Echo reported then is not written again): the chart's notes as
// the message, and the revision number in the reason. It also gives the
// name of the release, when one is deployed.
func deployedCondition(rel *release.Release) (metav1.Condition, string) {
	if rel == nil {
		return metav1.Condition{Type: echov1alpha1.EchoConditionDeployed, Status: metav1.ConditionFalse,
			Reason: echov1alpha1.EchoReasonReleaseNotFound, Message: "The release has no deployed revision"}, ""
	}
	reason, message := echov1alpha1.EchoReasonInstallSuccessful, "release was successfully installed"
	if rel.Version > 1 {
		reason, message = echov1alpha1.EchoReasonUpgradeSuccessful, "release was successfully upgraded"
	}
	if rel.Info != nil && rel.Info.Notes != "" {
		message = rel.Info.Notes
	}
	if len(message) > maxDeployedMessage {
		message = message[:maxDeployedMessage-3] + "..."
	}
	return metav1.Condition{Type: echov1alpha1.EchoConditionDeployed, Status: metav1.ConditionTrue, Reason: reason, Message: message}, rel.Name
}

// releaseRecordToEcho maps a release Secret to the Echo of its release's
// name, in its namespace.
func releaseRecordToEcho(_ context.Context, obj client.Object) []reconcile.Request {
	name := releaserecords.ReleaseNameOf(obj)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}
