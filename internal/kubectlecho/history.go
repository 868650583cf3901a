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
	var out *outputFlags
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions of an Echo's Helm release (the live API's EchoRevisions)",
		Long: "List the revisions of an Echo's Helm release, oldest first. -o wide adds each revision's app version and first deployment; " +
			"-o json or yaml prints them as a List of EchoRevisions, with the values and manifest each was rendered with.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(connect, echoNames),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			return run(connect, func(ctx context.Context, e *env) error { return e.history(ctx, args[0], out) })
		},
	}
	out = addOutputFlags(cmd, true)
	return cmd
}

func (e *env) history(ctx context.Context, name string, out *outputFlags) error {
	revisions, err := e.revisions(ctx, name)
	if err != nil {
		return err
	}
	if len(revisions) == 0 {
		return fmt.Errorf("no release revision of Echo %s in namespace %s", name, e.namespace)
	}
	if !out.human() {
		return e.printList(out, objects(revisions))
	}
	return e.printRevisions(revisions, out.isWide())
}

func newBackupsCommand(connect func() (*env, error)) *cobra.Command {
	var (
		location string
		out      *outputFlags
	)
	cmd := &cobra.Command{
		Use:   "backups [--location LOCATION]",
		Short: "List the backups the namespace's locations hold (the live API's StoredBackups)",
		Long: "List the backups the namespace's EchoBackupLocations hold. -o wide adds each one's location, key, files, " +
			"format version and what the verification said; -o json or yaml prints them as a List of StoredBackups.",
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			return run(connect, func(ctx context.Context, e *env) error { return e.backups(ctx, location, out) })
		},
	}
	cmd.Flags().StringVar(&location, "location", "", "list only this EchoBackupLocation's backups")
	_ = cmd.RegisterFlagCompletionFunc("location", completeFlagNames(connect, locationNames))
	out = addOutputFlags(cmd, true)
	return cmd
}

func (e *env) backups(ctx context.Context, location string, out *outputFlags) error {
	list := &livev1alpha1.StoredBackupList{}
	opts := []client.ListOption{client.InNamespace(e.namespace)}
	if location != "" {
		opts = append(opts, client.MatchingLabels{livev1alpha1.LocationLabel: location})
	}
	if err := e.client.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing stored backups: %w", err)
	}
	if !out.human() {
		return e.printList(out, objects(list.Items))
	}
	if len(list.Items) == 0 {
		e.printf("No stored backups in namespace %s\n", e.namespace)
		return nil
	}
	header := []string{"NAME", "ECHO", "BACKUP", "SIZE", "VERIFIED", "AGE"}
	if out.isWide() {
		header = append(header, "LOCATION", "KEY", "FILES", "FORMAT", "MESSAGE")
	}
	rows := make([][]string, 0, len(list.Items))
	for _, b := range list.Items {
		row := []string{b.Name, b.Source.Namespace + "/" + b.Source.Name, b.Source.Backup, strconv.FormatInt(b.Size, 10),
			strconv.FormatBool(b.Verified), e.age(b.CreationTimestamp.Time)}
		if out.isWide() {
			row = append(row, b.Location, b.Key, strconv.Itoa(b.Files), strconv.Itoa(b.FormatVersion), orNone(b.Message))
		}
		rows = append(rows, row)
	}
	return printTable(e.streams.Out, header, rows)
}
