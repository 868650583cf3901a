// Package controllers holds the Go reconcilers of the operator: what the
// Helm chart cannot do on its own. One reconciler per concern, its files
// named for what they hold:
// It imports api and internal, never cmd or test/: cmd/manager/app wires it
// into the manager.
//
//   - Echo (its release is reconciled by internal/helmreconciler):
//     echo_controller.go reports readiness ("echo-status"), computed in
//     echo_readiness.go, and checks the release records in
//     echo_releaserecords.go; echo_finalbackup.go runs the last backup
//     before delete ("echo-finalbackup"), on the rule internal/finalbackup
//     shares with the release's uninstall gate.
//   - EchoBackup: echobackup_controller.go runs a backup, echobackup_job.go
//     builds its Jobs and ConfigMap, echobackup_config.go captures the
//     configuration, echobackup_status.go writes the outcome,
//     echobackup_delete.go deletes the artifact.
//   - EchoBackupSchedule: echobackupschedule_controller.go starts and prunes
//     backups, echobackupschedule_cron.go reads schedules and retention.
//   - EchoRestore: echorestore_controller.go runs a restore,
//     echorestore_job.go builds its Jobs, echorestore_target.go finds or
//     creates the Echo, echorestore_quiesce.go stops it while the data is
//     written and gives it back.
//
// What the kinds share: datamover_job.go (the data mover's pod, storage
// and failure policy), jobs.go (creating, reading and removing Jobs: one
// way to read a Job's outcome, and only of a Job the operator created for
// its owner, recorded by UID in the owner's status or, the record lost,
// signed with the operator's key), echo_data.go (an
// Echo's data claim), finalizers.go, conditions.go (conditions and status
// patches) and clock.go; child names come from internal/names. What a
// storage may reach, checked before a Job: storage_secrets.go (opted-in
// Secrets and ServiceAccounts, a missing Secret's wait),
// storage_endpoints.go (where a token or SSE-C key may go),
// storage_claims.go (opted-in claims, the release's data claim),
// storage_secretwatch.go (the work a Secret's arrival brings back) and
// storage_location.go (storage.locationRef).
package controllers
