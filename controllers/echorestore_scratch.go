package controllers

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The EchoRestore of a restore test (RestoreTestOfLabel, set by the
// EchoBackupSchedule that runs the test) restores into a scratch Echo: one
// it creates itself, that exposes nothing outside the cluster, runs one
// replica and takes no final backup, and whose restored data the mover
// reads back and compares with the backup's manifest.

// restoreTestOf is the schedule whose restore test rs is, if any.
func restoreTestOf(rs *echov1alpha1.EchoRestore) string {
	return rs.Labels[echov1alpha1.RestoreTestOfLabel]
}

// isScratchEchoOf reports whether echo is the scratch Echo of a restore
// test of schedule: only such an Echo may a restore test restore into, or
// its schedule delete.
func isScratchEchoOf(echo *echov1alpha1.Echo, schedule string) bool {
	return schedule != "" && echo.Labels[echov1alpha1.RestoreTestOfLabel] == schedule
}

// makeScratch turns the Echo a restore test creates from the backed-up
// configuration into a scratch Echo: labelled with the schedule, owned by
// it (deleting the schedule deletes the Echo), with one replica, a
// ClusterIP Service, no Ingress, autoscaling, high availability nor final
// backup. Its persistence, and so its claim, are its own.
func makeScratch(rs *echov1alpha1.EchoRestore, echo *echov1alpha1.Echo) {
	if echo.Labels == nil {
		echo.Labels = map[string]string{}
	}
	echo.Labels[echov1alpha1.RestoreTestOfLabel] = restoreTestOf(rs)
	if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "EchoBackupSchedule" {
		echo.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID,
		}}
	}
	spec := &echo.Spec
	spec.Replicas = ptr.To[int32](1)
	spec.Ingress = nil
	spec.Autoscaling = nil
	spec.HighAvailability = nil
	spec.Backup = nil
	spec.Service = echov1alpha1.ServiceSpec{Type: echov1alpha1.ServiceType("ClusterIP"), Port: spec.Service.Port}
}

// notScratchMessage says why a restore test does not restore into an
// existing Echo.
func notScratchMessage(rs *echov1alpha1.EchoRestore, echo *echov1alpha1.Echo) string {
	return fmt.Sprintf("Echo %s exists and is not the scratch Echo of a restore test of EchoBackupSchedule %s (label %s): "+
		"a restore test never restores into it. Rename or delete that Echo, and the next restore test creates its scratch Echo",
		echo.Name, restoreTestOf(rs), echov1alpha1.RestoreTestOfLabel)
}
