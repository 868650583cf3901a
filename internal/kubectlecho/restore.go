package kubectlecho

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func newRestoreCommand(connect func() (*env, error)) *cobra.Command {
	var (
		opts restoreOptions
		out  *outputFlags
		wait *waitFlags
	)
	cmd := &cobra.Command{
		Use:   "restore BACKUP --to NAME",
		Short: "Restore an EchoBackup into an Echo: in place when it exists, into a new Echo otherwise",
		Long: "Restore a completed EchoBackup into the Echo --to names: in place when it exists, into a new Echo created from the backed-up " +
			"configuration otherwise. --dry-run shows what the restore would do and every reason it would fail, has the API server check " +
			"the EchoRestore, and writes nothing. --wait waits until the restore completes; -o name, json or yaml prints the EchoRestore.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(connect, backupNames),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			if opts.dryRun && wait.wait {
				return errors.New("--dry-run writes nothing, so there is nothing to --wait for")
			}
			return run(connect, func(ctx context.Context, e *env) error {
				if opts.dryRun {
					return e.previewRestore(ctx, args[0], opts, out)
				}
				rs, err := e.restore(ctx, args[0], opts, out)
				if err != nil {
					return err
				}
				return e.finishRestore(ctx, rs, out, wait)
			})
		},
	}
	cmd.Flags().StringVar(&opts.to, "to", "", "the Echo to restore into")
	cmd.Flags().StringVar((*string)(&opts.existingData), "existing-data", string(echov1alpha1.ExistingDataFail),
		"what to do when the Echo's volume holds data: Fail refuses to restore over it, Replace restores over it and keeps it aside")
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "show what the restore would do and why it would fail, have the API server check it, and write nothing")
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.RegisterFlagCompletionFunc("to", completeFlagNames(connect, echoNames))
	_ = cmd.RegisterFlagCompletionFunc("existing-data", cobra.FixedCompletions(
		[]string{string(echov1alpha1.ExistingDataFail), string(echov1alpha1.ExistingDataReplace)}, cobra.ShellCompDirectiveNoFileComp))
	out = addOutputFlags(cmd, false)
	wait = addWaitFlags(cmd, "the restore completes and the Echo runs on the restored data")
	return cmd
}

// restoreOptions are the restore command's flags but -o and --wait.
type restoreOptions struct {
	to           string
	existingData echov1alpha1.ExistingDataPolicy
	dryRun       bool
}

// restoreOf is the EchoRestore of backup the options describe.
func (e *env) restoreOf(backup string, opts restoreOptions) *echov1alpha1.EchoRestore {
	return &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.namespace, GenerateName: generateName(opts.to + "-restore-")},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: backup}, EchoName: opts.to,
			ExistingData: opts.existingData},
	}
}

func (e *env) restore(ctx context.Context, backup string, opts restoreOptions, out *outputFlags) (*echov1alpha1.EchoRestore, error) {
	b := &echov1alpha1.EchoBackup{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: backup}, b); err != nil {
		return nil, err
	}
	if phase, _ := echov1alpha1.BackupPhase(b.Status.Conditions); phase != echov1alpha1.PhaseCompleted {
		return nil, fmt.Errorf("EchoBackup %s is %s, not Completed: restore a completed backup (kubectl get echobackups)", backup, phase)
	}
	rs := e.restoreOf(backup, opts)
	if err := e.client.Create(ctx, rs); err != nil {
		return nil, err
	}
	if out.human() {
		e.printf("Created EchoRestore %s of EchoBackup %s into Echo %s; wait for it: kubectl wait echorestore/%s --for=condition=Complete --timeout=10m\n",
			rs.Name, backup, opts.to, rs.Name)
	}
	return rs, nil
}

// finishRestore waits for a restore the command started when --wait says
// so, and prints it as -o says.
func (e *env) finishRestore(ctx context.Context, rs *echov1alpha1.EchoRestore, out *outputFlags, wait *waitFlags) error {
	var waitErr error
	if wait.wait {
		waitErr = e.waitRestore(ctx, wait, rs)
		if waitErr == nil && out.human() {
			how := "in place"
			if rs.Status.EchoCreated {
				how = "into the new Echo it created"
			}
			e.printf("EchoRestore %s completed: Echo %s runs on the restored data (restored %s)\n", rs.Name, rs.Status.EchoName, how)
		}
	}
	if !out.human() {
		if err := e.printObject(out, rs); err != nil {
			return err
		}
	}
	return waitErr
}
