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
	var location, schedule string
	cmd := &cobra.Command{
		Use:   "backup NAME [--location LOCATION | --schedule SCHEDULE]",
		Short: "Back up an Echo now, to a location, or from a schedule's template",
		Long: "Back up an Echo now. With --schedule, ask the schedule for a backup from its template (annotation echo.dev/backup-now). " +
			"Otherwise create an EchoBackup to the EchoBackupLocation --location names, or to the namespace's only location.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return run(connect, func(ctx context.Context, e *env) error {
				if schedule != "" {
					return e.backupFromSchedule(ctx, args[0], schedule)
				}
				return e.backupToLocation(ctx, args[0], location)
			})
		},
	}
	cmd.Flags().StringVar(&location, "location", "", "the EchoBackupLocation to back up to (default: the namespace's only one)")
	cmd.Flags().StringVar(&schedule, "schedule", "", "the EchoBackupSchedule whose template to back up with")
	cmd.MarkFlagsMutuallyExclusive("location", "schedule")
	return cmd
}

// backupFromSchedule asks a schedule of the Echo for a backup now.
func (e *env) backupFromSchedule(ctx context.Context, echoName, name string) error {
	s := &echov1alpha1.EchoBackupSchedule{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, s); err != nil {
		return err
	}
	if s.Spec.Template.EchoName != echoName {
		return fmt.Errorf("EchoBackupSchedule %s backs up Echo %s, not %s", name, s.Spec.Template.EchoName, echoName)
	}
	patch := client.MergeFrom(s.DeepCopy())
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, echov1alpha1.BackupNowAnnotation, e.now().UTC().Format(time.RFC3339))
	if err := e.client.Patch(ctx, s, patch); err != nil {
		return err
	}
	e.printf("Asked EchoBackupSchedule %s for a backup of Echo %s now; its backups: kubectl get echobackups -l %s=%s\n",
		name, echoName, echov1alpha1.ScheduleLabel, name)
	return nil
}

// backupToLocation creates an EchoBackup of the Echo to a location.
func (e *env) backupToLocation(ctx context.Context, echoName, location string) error {
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: echoName}, &echov1alpha1.Echo{}); err != nil {
		return err
	}
	location, err := e.pickLocation(ctx, location)
	if err != nil {
		return err
	}
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, GenerateName: generateName(echoName + "-")},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: echoName,
			Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: location}}},
	}
	if err := e.client.Create(ctx, b); err != nil {
		return err
	}
	e.printf("Created EchoBackup %s of Echo %s to location %s; follow it: kubectl get echobackup %s -w\n", b.Name, echoName, location, b.Name)
	return nil
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

func newRestoreCommand(connect func() (*env, error)) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "restore BACKUP --to NAME",
		Short: "Restore an EchoBackup into an Echo: in place when it exists, into a new Echo otherwise",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return run(connect, func(ctx context.Context, e *env) error { return e.restore(ctx, args[0], to) })
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the Echo to restore into")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func (e *env) restore(ctx context.Context, backup, to string) error {
	b := &echov1alpha1.EchoBackup{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: backup}, b); err != nil {
		return err
	}
	if phase, _ := echov1alpha1.BackupPhase(b.Status.Conditions); phase != echov1alpha1.PhaseCompleted {
		return fmt.Errorf("EchoBackup %s is %s, not Completed: restore a completed backup (kubectl get echobackups)", backup, phase)
	}
	rs := &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, GenerateName: generateName(to + "-restore-")},
		Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: backup}, EchoName: to},
	}
	if err := e.client.Create(ctx, rs); err != nil {
		return err
	}
	e.printf("Created EchoRestore %s of EchoBackup %s into Echo %s; wait for it: kubectl wait echorestore/%s --for=condition=Complete --timeout=10m\n",
		rs.Name, backup, to, rs.Name)
	return nil
}
