package v1alpha1

// Event actions. The operator records its Events through the
// events.k8s.io/v1 API, where each Event names the action the operator was
// taking, or failed to take, regarding the object: the reasons of one
// operation share its action.
const (
	EventActionCheckingReadiness       = "CheckingReadiness"
	EventActionVerifyingReleaseRecords = "VerifyingReleaseRecords"
	EventActionInstallingRelease       = "InstallingRelease"
	EventActionUpgradingRelease        = "UpgradingRelease"
	EventActionUninstallingRelease     = "UninstallingRelease"
	EventActionRecoveringRelease       = "RecoveringRelease"
	EventActionBackingUpBeforeDeletion = "BackingUpBeforeDeletion"
	EventActionBackingUp               = "BackingUp"
	EventActionDeletingArtifact        = "DeletingArtifact"
	// EventActionCopying is the action of copying a backup to the
	// storages of its spec.copyTo.
	EventActionCopying    = "Copying"
	EventActionScheduling = "Scheduling"
	EventActionPruning    = "Pruning"
	// EventActionTestingRestore is the action of a schedule's restore
	// tests (spec.restoreTest).
	EventActionTestingRestore       = "TestingRestore"
	EventActionRestoring            = "Restoring"
	EventActionReleasingRestoreHold = "ReleasingRestoreHold"
	EventActionDecoding             = "Decoding"
	// EventActionDeletingLocation is the action of holding back the
	// deletion of an EchoBackupLocation in use.
	EventActionDeletingLocation = "DeletingLocation"
	// EventActionCheckingStorageSecrets is the action of refusing, or
	// waiting for, what a backup, an artifact deletion or a restore would
	// hand to its data mover: a Secret, a ServiceAccount, a claim, an
	// endpoint a token or key would go to.
	EventActionCheckingStorageSecrets = "CheckingStorageSecrets"
	// EventActionCheckingJobOwner is the action of refusing a Job that
	// has the name of a backup's or restore's Job but that echo-operator
	// did not create for it.
	EventActionCheckingJobOwner = "CheckingJobOwner"
	// EventActionPlacingDataMover is the action of waiting for a node to
	// take the pod of a backup's or restore's data mover.
	EventActionPlacingDataMover = "PlacingDataMover"
	// EventActionReconciling is the action of the reasons this package
	// does not define: those the Helm library records itself, such as
	// ValueOverridden.
	EventActionReconciling = "Reconciling"
)

// eventActions maps every Event reason of this package to its action.
var eventActions = map[string]string{
	EventReasonReady:                   EventActionCheckingReadiness,
	EventReasonNotReady:                EventActionCheckingReadiness,
	EventReasonUntrustedReleaseRecords: EventActionVerifyingReleaseRecords,
	EventReasonReleaseInstallFailed:    EventActionInstallingRelease,
	EventReasonReleaseUpgradeFailed:    EventActionUpgradingRelease,
	EventReasonReleaseUninstalled:      EventActionUninstallingRelease,
	EventReasonReleaseRecovered:        EventActionRecoveringRelease,
	EventReasonFinalBackupStarted:      EventActionBackingUpBeforeDeletion,
	EventReasonFinalBackupCompleted:    EventActionBackingUpBeforeDeletion,
	EventReasonFinalBackupFailed:       EventActionBackingUpBeforeDeletion,

	EventReasonBackupStarted:        EventActionBackingUp,
	EventReasonBackupCompleted:      EventActionBackingUp,
	EventReasonBackupFailed:         EventActionBackingUp,
	EventReasonDeletingArtifact:     EventActionDeletingArtifact,
	EventReasonArtifactDeleted:      EventActionDeletingArtifact,
	EventReasonArtifactDeleteFailed: EventActionDeletingArtifact,
	EventReasonArtifactRetained:     EventActionDeletingArtifact,
	EventReasonArtifactPruned:       EventActionDeletingArtifact,
	EventReasonPruneRetained:        EventActionDeletingArtifact,
	EventReasonCopyStarted:          EventActionCopying,
	EventReasonCopyCompleted:        EventActionCopying,
	EventReasonCopyFailed:           EventActionCopying,
	EventReasonCopyRetried:          EventActionCopying,

	EventReasonScheduledBackup:  EventActionScheduling,
	EventReasonInvalidSchedule:  EventActionScheduling,
	EventReasonBackupNotStarted: EventActionScheduling,
	EventReasonBackupRequested:  EventActionScheduling,
	EventReasonPrunedBackup:     EventActionPruning,

	EventReasonRestoreTestStarted:   EventActionTestingRestore,
	EventReasonRestoreTestRequested: EventActionTestingRestore,
	EventReasonRestoreTestSucceeded: EventActionTestingRestore,
	EventReasonRestoreTestFailed:    EventActionTestingRestore,
	EventReasonRestoreTestSkipped:   EventActionTestingRestore,
	EventReasonScratchEchoTaken:     EventActionTestingRestore,

	EventReasonLocationInUse: EventActionDeletingLocation,

	EventReasonRestoreStarted:      EventActionRestoring,
	EventReasonEchoCreated:         EventActionRestoring,
	EventReasonEchoQuiesced:        EventActionRestoring,
	EventReasonDataRestored:        EventActionRestoring,
	EventReasonRestoreCompleted:    EventActionRestoring,
	EventReasonRestoreFailed:       EventActionRestoring,
	EventReasonRestoreHoldReleased: EventActionReleasingRestoreHold,

	EventReasonUndecodableObject: EventActionDecoding,

	EventReasonSecretNotOptedIn:   EventActionCheckingStorageSecrets,
	EventReasonIdentityNotOptedIn: EventActionCheckingStorageSecrets,
	EventReasonSecretNotFound:     EventActionCheckingStorageSecrets,
	EventReasonClaimNotOptedIn:    EventActionCheckingStorageSecrets,
	EventReasonDataClaimNotOwned:  EventActionCheckingStorageSecrets,
	EventReasonEndpointNotAllowed: EventActionCheckingStorageSecrets,

	EventReasonJobNotOwned: EventActionCheckingJobOwner,

	EventReasonMoverUnschedulable: EventActionPlacingDataMover,
}

// EventAction returns the action of the Events of a reason:
// EventActionReconciling for a reason this package does not define.
func EventAction(reason string) string {
	if action, ok := eventActions[reason]; ok {
		return action
	}
	return EventActionReconciling
}
