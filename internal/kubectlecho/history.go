package kubectlecho

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
)

func newHistoryCommand(connect func() (*env, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions of an Echo's Helm release (the live API's EchoRevisions)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return run(connect, func(ctx context.Context, e *env) error {
				revisions, err := e.revisions(ctx, args[0])
				if err != nil {
					return err
				}
				if len(revisions) == 0 {
					return fmt.Errorf("no release revision of Echo %s in namespace %s", args[0], e.namespace)
				}
				return e.printRevisions(revisions)
			})
		},
	}
}

func newBackupsCommand(connect func() (*env, error)) *cobra.Command {
	var location string
	cmd := &cobra.Command{
		Use:   "backups [--location LOCATION]",
		Short: "List the backups the namespace's locations hold (the live API's StoredBackups)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return run(connect, func(ctx context.Context, e *env) error { return e.backups(ctx, location) })
		},
	}
	cmd.Flags().StringVar(&location, "location", "", "list only this EchoBackupLocation's backups")
	return cmd
}

func (e *env) backups(ctx context.Context, location string) error {
	list := &livev1alpha1.StoredBackupList{}
	opts := []client.ListOption{client.InNamespace(e.namespace)}
	if location != "" {
		opts = append(opts, client.MatchingLabels{livev1alpha1.LocationLabel: location})
	}
	if err := e.client.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing stored backups: %w", err)
	}
	if len(list.Items) == 0 {
		e.printf("No stored backups in namespace %s\n", e.namespace)
		return nil
	}
	rows := make([][]string, 0, len(list.Items))
	for _, b := range list.Items {
		rows = append(rows, []string{b.Name, b.Source.Namespace + "/" + b.Source.Name, b.Source.Backup, strconv.FormatInt(b.Size, 10),
			strconv.FormatBool(b.Verified), e.age(b.CreationTimestamp.Time)})
	}
	return printTable(e.streams.Out, []string{"NAME", "ECHO", "BACKUP", "SIZE", "VERIFIED", "AGE"}, rows)
}
