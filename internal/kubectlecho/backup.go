package kubectlecho

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// maxGenerateName leaves room, in a 63-character EchoBackup or EchoRestore
// name, for the five characters the API server adds to a generateName.
const maxGenerateName = 58

func newBackupCommand(connect func() (*env, error)) *cobra.Command {
	var (
		location, schedule string
		out                *outputFlags
		wait               *waitFlags
	)
	cmd := &cobra.Command{
		Use:   "backup NAME [--location LOCATION | --schedule SCHEDULE]",
		Short: "Back up an Echo now, to a location, or from a schedule's template",
		Long: "Back up an Echo now. With --schedule, ask the schedule for a backup from its template (annotation echo.dev/backup-now). " +
			"Otherwise create an EchoBackup to the EchoBackupLocation --location names, or to the namespace's only location. " +
			"--wait waits until the backup completes; -o name, json or yaml prints the EchoBackup (once done, with --wait).",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(connect, echoNames),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			return run(connect, func(ctx context.Context, e *env) error {
				var (
					b   *echov1alpha1.EchoBackup
					err error
				)
				if schedule != "" {
					b, err = e.backupFromSchedule(ctx, args[0], schedule, out, wait)
				} else {
					b, err = e.backupToLocation(ctx, args[0], location, out)
				}
				if err != nil || b == nil {
					return err
				}
				return e.finishBackup(ctx, b, out, wait)
			})
		},
	}
	cmd.Flags().StringVar(&location, "location", "", "the EchoBackupLocation to back up to (default: the namespace's only one)")
	cmd.Flags().StringVar(&schedule, "schedule", "", "the EchoBackupSchedule whose template to back up with")
	cmd.MarkFlagsMutuallyExclusive("location", "schedule")
	_ = cmd.RegisterFlagCompletionFunc("location", completeFlagNames(connect, locationNames))
	_ = cmd.RegisterFlagCompletionFunc("schedule", completeFlagNames(connect, scheduleNames))
	out = addOutputFlags(cmd, false)
	wait = addWaitFlags(cmd, "the backup completes")
	return cmd
}

// finishBackup waits for a backup the command started when --wait says
// so, and prints it as -o says.
func (e *env) finishBackup(ctx context.Context, b *echov1alpha1.EchoBackup, out *outputFlags, wait *waitFlags) error {
	var waitErr error
	if wait.wait {
		waitErr = e.waitBackup(ctx, wait, b)
		if waitErr == nil && out.human() {
			e.printf("EchoBackup %s completed: %d bytes, %s, Echo generation %d, at %s\n",
				b.Name, b.Status.Size, files(b.Status.Files), b.Status.EchoGeneration, orNone(b.Status.Location))
		}
	}
	if !out.human() {
		if err := e.printObject(out, b); err != nil {
			return err
		}
	}
	return waitErr
}

// backupFromSchedule asks a schedule of the Echo for a backup now. The
// EchoBackup the schedule starts is returned when the command waits for
// it or prints it (-o), else nil.
func (e *env) backupFromSchedule(ctx context.Context, echoName, name string, out *outputFlags, wait *waitFlags) (*echov1alpha1.EchoBackup, error) {
	s := &echov1alpha1.EchoBackupSchedule{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, s); err != nil {
		return nil, err
	}
	if s.Spec.Template.EchoName != echoName {
		return nil, fmt.Errorf("EchoBackupSchedule %s backs up Echo %s, not %s", name, s.Spec.Template.EchoName, echoName)
	}
	follow := wait.wait || !out.human()
	var before map[string]bool
	if follow {
		var err error
		if before, err = e.requestedBackups(ctx, name); err != nil {
			return nil, err
		}
	}
	patch := client.MergeFrom(s.DeepCopy())
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, echov1alpha1.BackupNowAnnotation, e.now().UTC().Format(time.RFC3339))
	if err := e.client.Patch(ctx, s, patch); err != nil {
		return nil, err
	}
	if out.human() {
		e.printf("Asked EchoBackupSchedule %s for a backup of Echo %s now; its backups: kubectl get echobackups -l %s=%s\n",
			name, echoName, echov1alpha1.ScheduleLabel, name)
	}
	if !follow {
		return nil, nil
	}
	timeout := requestTimeout
	if wait.wait {
		timeout = wait.timeout
	}
	return e.startedBackup(ctx, name, before, timeout)
}

// requestedBackups are the names of the backups a schedule started on
// request (backup now) so far.
func (e *env) requestedBackups(ctx context.Context, schedule string) (map[string]bool, error) {
	list := &echov1alpha1.EchoBackupList{}
	if err := e.client.List(ctx, list, client.InNamespace(e.namespace), client.MatchingLabels{echov1alpha1.ScheduleLabel: schedule}); err != nil {
		return nil, fmt.Errorf("listing the backups of EchoBackupSchedule %s: %w", schedule, err)
	}
	names := map[string]bool{}
	for _, b := range list.Items {
		if strings.Contains(b.Name, requestedBackupInfix) {
			names[b.Name] = true
		}
	}
	return names, nil
}

// requestedBackupInfix is in the name of every backup a schedule starts
// on request, and of no backup it starts on its cron schedule.
const requestedBackupInfix = "-now-"

// startedBackup waits for the backup a schedule starts on the request just
// made: one started on request that was not there before.
func (e *env) startedBackup(ctx context.Context, schedule string, before map[string]bool, timeout time.Duration) (*echov1alpha1.EchoBackup, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	for {
		read, cancelRead := context.WithTimeout(ctx, requestTimeout)
		list := &echov1alpha1.EchoBackupList{}
		err := e.client.List(read, list, client.InNamespace(e.namespace), client.MatchingLabels{echov1alpha1.ScheduleLabel: schedule})
		cancelRead()
		if err == nil {
			for i := range list.Items {
				if b := &list.Items[i]; strings.Contains(b.Name, requestedBackupInfix) && !before[b.Name] {
					return b, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w after %s: EchoBackupSchedule %s started no backup; is the operator running? kubectl describe echobackupschedule %s",
				errTimedOut, timeout, schedule, schedule)
		case <-time.After(pollInterval):
		}
	}
}

// backupToLocation creates an EchoBackup of the Echo to a location.
func (e *env) backupToLocation(ctx context.Context, echoName, location string, out *outputFlags) (*echov1alpha1.EchoBackup, error) {
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: echoName}, &echov1alpha1.Echo{}); err != nil {
		return nil, err
	}
	location, err := e.pickLocation(ctx, location)
	if err != nil {
		return nil, err
	}
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, GenerateName: generateName(echoName + "-")},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: echoName,
			Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: location}}},
	}
	if err := e.client.Create(ctx, b); err != nil {
		return nil, err
	}
	if out.human() {
		e.printf("Created EchoBackup %s of Echo %s to location %s; follow it: kubectl get echobackup %s -w\n", b.Name, echoName, location, b.Name)
	}
	return b, nil
}

// pickLocation is the location named, which must exist, or the
// namespace's only one.
func (e *env) pickLocation(ctx context.Context, name string) (string, error) {
	if name != "" {
		err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, &echov1alpha1.EchoBackupLocation{})
		return name, err
	}
	list := &echov1alpha1.EchoBackupLocationList{}
	if err := e.client.List(ctx, list, client.InNamespace(e.namespace)); err != nil {
		return "", err
	}
	var names []string
	for _, l := range list.Items {
		names = append(names, l.Name)
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", fmt.Errorf("namespace %s has no EchoBackupLocation: create one (docs/backup-restore.md#backup-locations), or use --schedule", e.namespace)
	default:
		return "", errors.New("name one of the locations of namespace " + e.namespace + " with --location: " + strings.Join(names, ", "))
	}
}

// generateName keeps a generateName prefix short enough for a 63-character name.
func generateName(prefix string) string {
	if len(prefix) <= maxGenerateName {
		return prefix
	}
	return strings.TrimRight(prefix[:maxGenerateName-1], "-.") + "-"
}
