package kubectlecho

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Shell completion: cobra's `completion bash|zsh|fish|powershell` writes
// the script of a shell, which runs the hidden `__complete` command; the
// functions here complete the names of the objects a command takes, read
// from the namespace of -n with the user's kubeconfig. kubectl completes
// `kubectl echo ...` by running `kubectl_complete-echo` from the PATH
// (plugins/kubectl_complete-echo), which runs `kubectl-echo __complete`.

// completionTimeout bounds the reads of one completion: a shell waits for it.
const completionTimeout = 5 * time.Second

// namesFunc lists the names of the objects of a kind in the namespace;
// args are the command's arguments so far.
type namesFunc func(ctx context.Context, e *env, args []string) ([]string, error)

// completeNames completes the first argument of a command with the names
// list returns; a command takes one such argument.
func completeNames(connect func() (*env, error), list namesFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeFlagNames(connect, list)(cmd, args, toComplete)
	}
}

// completeFlagNames completes a flag's value with the names list returns.
func completeFlagNames(connect func() (*env, error), list namesFunc) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		e, err := connect()
		if err != nil {
			cobra.CompDebugln("connecting: "+err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		names, err := list(ctx, e, args)
		if err != nil {
			cobra.CompDebugln("listing: "+err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// matching are the names that start with prefix, sorted, each once.
func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listNames lists the namespace's objects of list's kind and returns the
// names of those keep keeps (all, when keep is nil).
func listNames(ctx context.Context, e *env, list client.ObjectList, keep func(runtime.Object) bool) ([]string, error) {
	if err := e.client.List(ctx, list, client.InNamespace(e.namespace)); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, o := range items {
		if keep == nil || keep(o) {
			names = append(names, o.(client.Object).GetName())
		}
	}
	return names, nil
}

// echoNames are the namespace's Echoes.
func echoNames(ctx context.Context, e *env, _ []string) ([]string, error) {
	return listNames(ctx, e, &echov1alpha1.EchoList{}, nil)
}

// backupNames are the namespace's completed EchoBackups: those a restore
// takes.
func backupNames(ctx context.Context, e *env, _ []string) ([]string, error) {
	return listNames(ctx, e, &echov1alpha1.EchoBackupList{}, func(o runtime.Object) bool {
		phase, _ := echov1alpha1.BackupPhase(o.(*echov1alpha1.EchoBackup).Status.Conditions)
		return phase == echov1alpha1.PhaseCompleted
	})
}

// locationNames are the namespace's EchoBackupLocations.
func locationNames(ctx context.Context, e *env, _ []string) ([]string, error) {
	return listNames(ctx, e, &echov1alpha1.EchoBackupLocationList{}, nil)
}

// scheduleNames are the namespace's EchoBackupSchedules; those of the
// Echo named by the first argument, when there is one.
func scheduleNames(ctx context.Context, e *env, args []string) ([]string, error) {
	return listNames(ctx, e, &echov1alpha1.EchoBackupScheduleList{}, func(o runtime.Object) bool {
		return len(args) == 0 || o.(*echov1alpha1.EchoBackupSchedule).Spec.Template.EchoName == args[0]
	})
}
