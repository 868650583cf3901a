package kubectlecho

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// How much of an Echo's history `status` shows.
const (
	statusRevisions = 3
	statusEvents    = 5
)

func newStatusCommand(connect func() (*env, error)) *cobra.Command {
	var out *outputFlags
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show an Echo's readiness, replicas, address, backups, restore test, recent revisions and Events",
		Long: "Show an Echo's readiness, replicas, address, last and next backup, last restore test, the state of the last backup's copies, " +
			"recent revisions and Events. " +
			"-o wide adds its generations and conditions and the revisions' app versions; -o json, yaml or name prints the Echo itself.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(connect, echoNames),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			return run(connect, func(ctx context.Context, e *env) error { return e.status(ctx, args[0], out) })
		},
	}
	out = addOutputFlags(cmd, true)
	return cmd
}

func (e *env) status(ctx context.Context, name string, out *outputFlags) error {
	echo := &echov1alpha1.Echo{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, echo); err != nil {
		return err
	}
	if !out.human() {
		return e.printObject(out, echo)
	}
	fields := append(e.statusFields(echo), e.copiesField(ctx, echo))
	if out.isWide() {
		fields = append(fields, wideStatusFields(echo)...)
	}
	if err := printFields(e.streams.Out, fields); err != nil {
		return err
	}
	if err := e.printRecentRevisions(ctx, name, out.isWide()); err != nil {
		return err
	}
	return e.printRecentEvents(ctx, name)
}

// wideStatusFields are the lines -o wide adds: the generations and every
// condition.
func wideStatusFields(echo *echov1alpha1.Echo) [][2]string {
	conditions := make([]string, 0, len(echo.Status.Conditions))
	for _, c := range echo.Status.Conditions {
		conditions = append(conditions, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	return [][2]string{
		{"Generation", fmt.Sprintf("%d, observed %d", echo.Generation, echo.Status.ObservedGeneration)},
		{"Conditions", orNone(strings.Join(conditions, ", "))},
	}
}

// statusFields are the lines of status about the Echo itself.
func (e *env) statusFields(echo *echov1alpha1.Echo) [][2]string {
	st := echo.Status
	ready := "unknown: not reported yet"
	if c := meta.FindStatusCondition(st.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		ready = fmt.Sprintf("%s (%s) %s", c.Status, c.Reason, c.Message)
	}
	fields := [][2]string{
		{"Echo", echo.Namespace + "/" + echo.Name},
		{"Ready", ready},
		{"Replicas", fmt.Sprintf("%d ready, %d available, %d updated, of %d", st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas, st.Replicas)},
		{"Address", orNone(st.Address)},
	}
	if st.ExternalAddress != "" {
		fields = append(fields, [2]string{"External address", st.ExternalAddress})
	}
	last, next := "none", "none scheduled"
	if b := st.LastSuccessfulBackup; b != nil {
		last = fmt.Sprintf("%s, completed %s (%s ago)", b.Name, b.CompletionTime.UTC().Format(time.RFC3339), e.age(b.CompletionTime.Time))
	}
	if b := st.NextScheduledBackup; b != nil {
		next = fmt.Sprintf("%s, by schedule %s", b.Time.UTC().Format(time.RFC3339), b.Schedule)
	}
	return append(fields, [2]string{"Last backup", last}, [2]string{"Next backup", next}, [2]string{"Last restore test", e.restoreTest(st.LastRestoreTest)})
}

// restoreTest says how the newest restore test of the Echo's backups
// ended: the outcome, the backup, when, and why when it did not succeed.
func (e *env) restoreTest(t *echov1alpha1.RestoreTestResult) string {
	if t == nil {
		return "none"
	}
	line := fmt.Sprintf("%s (%s), backup %s, %s (%s ago), by schedule %s", t.Outcome, t.Reason, orNone(t.Backup),
		t.CompletionTime.UTC().Format(time.RFC3339), e.age(t.CompletionTime.Time), t.Schedule)
	if t.Outcome != echov1alpha1.RestoreTestSucceeded && t.Message != "" {
		line += ": " + t.Message
	}
	return line
}

// copiesField is the state of each copy of the Echo's last successful
// backup (its spec.copyTo), or why it cannot be told.
func (e *env) copiesField(ctx context.Context, echo *echov1alpha1.Echo) [2]string {
	ref := echo.Status.LastSuccessfulBackup
	if ref == nil {
		return [2]string{"Last backup's copies", "none"}
	}
	b := &echov1alpha1.EchoBackup{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: echo.Namespace, Name: ref.Name}, b); err != nil {
		return [2]string{"Last backup's copies", fmt.Sprintf("not available: %v", err)}
	}
	copies := make([]string, 0, len(b.Spec.CopyTo))
	for _, c := range b.Spec.CopyTo {
		state := "Pending"
		if i := slices.IndexFunc(b.Status.Copies, func(st echov1alpha1.BackupCopyStatus) bool { return st.Name == c.Name }); i >= 0 {
			st := b.Status.Copies[i]
			state = fmt.Sprintf("%s (%s)", st.Phase, st.Reason)
		}
		copies = append(copies, c.Name+" "+state)
	}
	return [2]string{"Last backup's copies", orNone(strings.Join(copies, ", "))}
}

// printRecentRevisions shows the newest revisions of the Echo's release,
// or why it cannot: the live API may not be served, or the user may not
// read it.
func (e *env) printRecentRevisions(ctx context.Context, name string, wide bool) error {
	revisions, err := e.revisions(ctx, name)
	e.printf("\nRevisions:\n")
	if err != nil {
		e.printf("  not available: %v\n", err)
		return nil
	}
	slices.Reverse(revisions)
	return e.printRevisions(revisions[:min(len(revisions), statusRevisions)], wide)
}

// revisions lists the revisions of the Echo's release, oldest first.
func (e *env) revisions(ctx context.Context, name string) ([]livev1alpha1.EchoRevision, error) {
	list := &livev1alpha1.EchoRevisionList{}
	if err := e.client.List(ctx, list, client.InNamespace(e.namespace), client.MatchingLabels{livev1alpha1.EchoLabel: name}); err != nil {
		return nil, fmt.Errorf("listing the revisions of Echo %s: %w", name, err)
	}
	slices.SortFunc(list.Items, func(a, b livev1alpha1.EchoRevision) int { return a.Revision - b.Revision })
	return list.Items, nil
}

// printRevisions prints revisions as a table; wide adds the app version
// and when each was first deployed.
func (e *env) printRevisions(revisions []livev1alpha1.EchoRevision, wide bool) error {
	header := []string{"REVISION", "STATUS", "CHART", "DEPLOYED", "DESCRIPTION"}
	if wide {
		header = append(header, "APP VERSION", "FIRST DEPLOYED")
	}
	rows := make([][]string, 0, len(revisions))
	for _, r := range revisions {
		row := []string{strconv.Itoa(r.Revision), r.Status, r.Chart, e.ago(r.LastDeployed), r.Description}
		if wide {
			row = append(row, orNone(r.AppVersion), e.ago(r.FirstDeployed))
		}
		rows = append(rows, row)
	}
	return printTable(e.streams.Out, header, rows)
}

// ago is how long ago t was, or <unknown>.
func (e *env) ago(t *metav1.Time) string {
	if t == nil {
		return "<unknown>"
	}
	return e.age(t.Time) + " ago"
}

// printRecentEvents shows the newest Events recorded on the Echo.
func (e *env) printRecentEvents(ctx context.Context, name string) error {
	list := &corev1.EventList{}
	selector := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.kind", "Echo"), fields.OneTermEqualSelector("involvedObject.name", name))
	if err := e.client.List(ctx, list, client.InNamespace(e.namespace), client.MatchingFieldsSelector{Selector: selector}); err != nil {
		return fmt.Errorf("listing the Events of Echo %s: %w", name, err)
	}
	events := list.Items
	slices.SortFunc(events, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	events = events[max(0, len(events)-statusEvents):]
	e.printf("\nEvents:\n")
	if len(events) == 0 {
		e.printf("  none\n")
		return nil
	}
	rows := make([][]string, 0, len(events))
	for _, ev := range events {
		rows = append(rows, []string{e.age(eventTime(ev)), ev.Type, ev.Reason, ev.Message})
	}
	return printTable(e.streams.Out, []string{"LAST SEEN", "TYPE", "REASON", "MESSAGE"}, rows)
}

// eventTime is when an Event was last seen, whichever API wrote it.
func eventTime(ev corev1.Event) time.Time {
	switch {
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// age is kubectl's short duration from t to now.
func (e *env) age(t time.Time) string {
	return duration.HumanDuration(e.now().Sub(t))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
