package kubectlecho

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestCompletion runs `kubectl-echo __complete ...`, as a shell's
// completion script does, against a namespace's objects.
func TestCompletion(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	pending := backupWith(running)
	pending.Name = "web-running"
	te := newTestEnv(t,
		&echov1alpha1.Echo{ObjectMeta: meta("web")}, &echov1alpha1.Echo{ObjectMeta: meta("journal")},
		&echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}},
		backupWith(completed), pending,
		&echov1alpha1.EchoBackupLocation{ObjectMeta: meta("offsite")},
		&echov1alpha1.EchoBackupSchedule{ObjectMeta: meta("web-nightly"), Spec: echov1alpha1.EchoBackupScheduleSpec{Template: echov1alpha1.EchoBackupSpec{EchoName: "web"}}},
		&echov1alpha1.EchoBackupSchedule{ObjectMeta: meta("journal-nightly"), Spec: echov1alpha1.EchoBackupScheduleSpec{Template: echov1alpha1.EchoBackupSpec{EchoName: "journal"}}},
	)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", ""}, []string{"journal", "web"}},
		{[]string{"status", "w"}, []string{"web"}},
		{[]string{"status", "web", ""}, nil},
		{[]string{"history", ""}, []string{"journal", "web"}},
		{[]string{"rollback", ""}, []string{"journal", "web"}},
		{[]string{"backup", ""}, []string{"journal", "web"}},
		{[]string{"backup", "web", "--location", ""}, []string{"offsite"}},
		{[]string{"backup", "web", "--schedule", ""}, []string{"web-nightly"}},
		{[]string{"backups", "--location", ""}, []string{"offsite"}},
		{[]string{"restore", ""}, []string{"b1"}},
		{[]string{"restore", "b1", "--to", ""}, []string{"journal", "web"}},
		{[]string{"restore", "b1", "--existing-data", ""}, []string{"Fail", "Replace"}},
		{[]string{"status", "web", "-o", ""}, []string{"wide", "json", "yaml", "name"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := &cobra.Command{Use: "kubectl-echo"}
			root.AddCommand(newStatusCommand(te.connect), newBackupCommand(te.connect), newRestoreCommand(te.connect),
				newHistoryCommand(te.connect), newRollbackCommand(te.connect), newBackupsCommand(te.connect))
			out := &bytes.Buffer{}
			root.SetOut(out)
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, tc.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if directive := lines[len(lines)-1]; directive != ":4" {
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
			// Cobra offers a command's required flags too.
			got := slices.DeleteFunc(lines[:len(lines)-1], func(l string) bool { return strings.HasPrefix(l, "-") })
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("completes %q, want %q among them", got, w)
				}
			}
			if tc.want == nil && len(got) > 0 || len(tc.want) > 0 && len(tc.want) < 4 && len(got) != len(tc.want) {
				t.Errorf("completes %q, want %q", got, tc.want)
			}
		})
	}
}
