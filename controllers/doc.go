// Package controllers holds every controller of the operator, of every
// kind: the entry of the Echo's Helm release reconciler, whose library is
// internal/helmreconciler, and the Go reconcilers of what the chart cannot
// do on its own. Its files are named for the kind and the aspect they
// reconcile, one line each below.
// It imports api and internal, never cmd or test/.
// Imported by cmd/manager/app.
//
// Echo:
//   - echo_release_controller.go: the Helm release reconcilers of
//     watches.yaml and the chart ("echo-controller"), built by
//     internal/helmreconciler;
//   - echo_status_controller.go: readiness in the status ("echo-status");
//   - echo_status_readiness.go: the status, computed from the children;
//   - echo_status_pacing.go: progress-only status changes held back;
//   - echo_status_releaserecords.go: the release records' verdict;
//   - echo_status_backups.go: the last and next backups in the status;
//   - echo_finalbackup.go: the last backup before delete
//     ("echo-finalbackup"), on internal/finalbackup's rule;
//   - echo_data.go: an Echo's data claim, as backups and restores mount it.
//
// EchoBackup:
//   - echobackup_controller.go: runs a backup;
//   - echobackup_job.go: its Jobs and ConfigMap;
//   - echobackup_config.go: the configuration it captures;
//   - echobackup_status.go: its outcome in the status;
//   - echobackup_delete.go: the artifact's deletion;
//   - echobackup_copy.go: its copies to further storages (spec.copyTo);
//   - echobackup_copy_retry.go: a failed copy made again on request
//     (RetryCopyAnnotation);
//   - echobackup_copy_delete.go: the deletion of the copies;
//   - echobackup_prune.go: the pruning of some of its locations
//     (PruneAnnotation).
//
// EchoBackupSchedule:
//   - echobackupschedule_controller.go: starts and prunes backups;
//   - echobackupschedule_cron.go: schedules and retention;
//   - echobackupschedule_retention.go: retention per location;
//   - echobackupschedule_restoretest.go: restore tests of its backups.
//
// EchoBackupLocation:
//   - echobackuplocation_controller.go: keeps a location while anything
//     refers to it.
//
// EchoRestore:
//   - echorestore_controller.go: runs a restore;
//   - echorestore_job.go: its Jobs;
//   - echorestore_target.go: finds or creates the Echo;
//   - echorestore_scratch.go: the scratch Echo of a restore test;
//   - echorestore_quiesce.go: stops the Echo while its data is written and
//     gives it back;
//   - echorestore_deadline.go: spec.timeout;
//   - echorestore_status.go: its steps and outcome in the status.
//
// What the kinds share:
//   - conditions.go: conditions, status patches, and the status shape of
//     backups and restores;
//   - jobs.go: creating, reading and removing Jobs, only of a Job the
//     operator created for its owner (recorded by UID or signed);
//   - datamover_job.go: the data mover's pod, storage and failure policy;
//   - datamover_placement.go: its resources and scheduling, from spec.mover;
//   - datamover_scheduling.go: a data mover pod no node takes, reported in
//     the status of its backup, copy or restore;
//   - moverlog.go: the end of a finished Job's mover log, kept in the
//     status (pods/log, read once);
//   - finalizers.go: adding and removing a finalizer;
//   - indexes.go: cache indexes more than one controller reads;
//   - ratelimit.go: the retry rate limiter and queue of every controller;
//   - clock.go: the reconcilers' clock;
//   - storage_secrets.go: opted-in Secrets and ServiceAccounts, a missing
//     Secret's wait;
//   - storage_endpoints.go: where a token or SSE-C key may go;
//   - storage_claims.go: opted-in claims, the release's data claim;
//   - storage_secretwatch.go: the work a Secret's arrival brings back;
//   - storage_location.go: storage.locationRef.
//
// Child names come from internal/names.
package controllers
