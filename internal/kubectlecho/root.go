package kubectlecho

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// requestTimeout bounds each command's requests.
const requestTimeout = 30 * time.Second

// env is what every command works with: the user's client, namespace and
// streams, and the time.
type env struct {
	client    client.Client
	namespace string
	streams   genericiooptions.IOStreams
	now       func() time.Time
}

// NewCommand is `kubectl echo` with its subcommands and kubectl's
// connection flags (--kubeconfig, --context, -n, ...).
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		// Named as its binary, which completion scripts run; shown as
		// kubectl runs it.
		Use:          "kubectl-echo",
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl echo"},
		Short:        "Operate Echoes: status, backups, restores, release history and rollbacks",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE:         func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	connect := func() (*env, error) { return newEnv(flags, streams) }
	root.AddCommand(
		newStatusCommand(connect),
		newBackupCommand(connect),
		newRestoreCommand(connect),
		newHistoryCommand(connect),
		newRollbackCommand(connect),
		newBackupsCommand(connect),
		newLogsCommand(connect, flags),
	)
	return root
}

// newEnv connects as the user's kubeconfig says.
func newEnv(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) (*env, error) {
	config, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	namespace, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, echov1alpha1.AddToScheme, livev1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &env{client: c, namespace: namespace, streams: streams, now: time.Now}, nil
}

// run runs a command's body with a context bounded by requestTimeout.
func run(connect func() (*env, error), body func(context.Context, *env) error) error {
	e, err := connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return body(ctx, e)
}

// printf prints to the command's output; a failed write to a terminal
// or pipe has no better place to be reported.
func (e *env) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(e.streams.Out, format, terminalSafeArgs(args)...)
}
