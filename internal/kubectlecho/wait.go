package kubectlecho

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// pollInterval is how often --wait reads the object it waits for.
const pollInterval = time.Second

// defaultWaitTimeout is --timeout's default.
const defaultWaitTimeout = 10 * time.Minute

// waitFlags are --wait and --timeout.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

// addWaitFlags adds --wait and --timeout to cmd; until says what --wait
// waits for.
func addWaitFlags(cmd *cobra.Command, until string) *waitFlags {
	w := &waitFlags{}
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until "+until+", with its progress on stderr; fail with the reason when it fails or --timeout passes")
	cmd.Flags().DurationVar(&w.timeout, "timeout", defaultWaitTimeout, "how long --wait waits")
	return w
}

// waitCheck looks at the object just read: the progress line to show, and
// whether the wait is over; a non-nil error ends it as a failure.
type waitCheck func() (progress string, done bool, err error)

// waitFor reads obj every pollInterval until check says it is done, and
// prints each new progress line on stderr. The wait is bounded by timeout
// alone, not by the command's requestTimeout, which bounds each read.
func (e *env) waitFor(ctx context.Context, timeout time.Duration, obj client.Object, check waitCheck) error {
	what := fmt.Sprintf("%s %s", e.kindOf(obj), obj.GetName())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	key := client.ObjectKeyFromObject(obj)
	var last string
	for {
		read, cancelRead := context.WithTimeout(ctx, requestTimeout)
		err := e.client.Get(read, key, obj)
		cancelRead()
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%s is gone: it was deleted while the command waited", what)
		case err != nil && ctx.Err() == nil:
			e.progressf("%s: reading it failed, trying again: %v\n", what, err)
		case err == nil:
			progress, done, err := check()
			if progress != last {
				e.progressf("%s\n", progress)
				last = progress
			}
			if err != nil || done {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %s waiting for %s; last seen: %s", errTimedOut, timeout, what, orNone(last))
		case <-time.After(pollInterval):
		}
	}
}

// kindOf is obj's kind, from the client's scheme.
func (e *env) kindOf(obj client.Object) string {
	if err := e.setKind(obj); err != nil {
		return "object"
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

// progressf prints a progress line on the error stream, which -o leaves to
// people.
func (e *env) progressf(format string, args ...any) {
	_, _ = fmt.Fprintf(e.streams.ErrOut, format, terminalSafeArgs(args)...)
}

// phaseProgress is the progress line of a backup or restore: its phase,
// its reason and the message of the condition that decides them.
func phaseProgress(kind, name string, phase echov1alpha1.Phase, reason string, conditions []metav1.Condition) string {
	line := fmt.Sprintf("%s %s: %s", kind, name, phase)
	if reason != "" {
		line += " (" + reason + ")"
	}
	if msg := phaseMessage(conditions); msg != "" {
		line += ": " + msg
	}
	return line
}

// phaseMessage is the message of the Failed condition when it is True,
// else the Complete condition's.
func phaseMessage(conditions []metav1.Condition) string {
	if c := meta.FindStatusCondition(conditions, echov1alpha1.BackupConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message
	}
	if c := meta.FindStatusCondition(conditions, echov1alpha1.BackupConditionComplete); c != nil {
		return c.Message
	}
	return ""
}

var (
	// errFailed is the error of a backup or restore that failed.
	errFailed = errors.New("failed")
	// errTimedOut is the error of a wait that --timeout ended.
	errTimedOut = errors.New("timed out")
)

// waitBackup waits until the EchoBackup completes or fails.
func (e *env) waitBackup(ctx context.Context, w *waitFlags, b *echov1alpha1.EchoBackup) error {
	return e.waitFor(ctx, w.timeout, b, func() (string, bool, error) {
		phase, reason := echov1alpha1.BackupPhase(b.Status.Conditions)
		progress := phaseProgress("EchoBackup", b.Name, phase, reason, b.Status.Conditions)
		switch phase {
		case echov1alpha1.PhaseFailed:
			return progress, true, fmt.Errorf("EchoBackup %s %w (%s): %s", b.Name, errFailed, reason, orNone(firstOf(b.Status.Error, phaseMessage(b.Status.Conditions))))
		case echov1alpha1.PhaseCompleted:
			return progress, true, nil
		}
		return progress, false, nil
	})
}

// waitRestore waits until the EchoRestore completes (its Echo runs on
// the restored data) or fails.
func (e *env) waitRestore(ctx context.Context, w *waitFlags, rs *echov1alpha1.EchoRestore) error {
	return e.waitFor(ctx, w.timeout, rs, func() (string, bool, error) {
		phase, reason := echov1alpha1.RestorePhase(rs.Status.Conditions)
		progress := phaseProgress("EchoRestore", rs.Name, phase, reason, rs.Status.Conditions)
		switch phase {
		case echov1alpha1.PhaseFailed:
			return progress, true, fmt.Errorf("EchoRestore %s %w (%s): %s", rs.Name, errFailed, reason, orNone(firstOf(rs.Status.Error, phaseMessage(rs.Status.Conditions))))
		case echov1alpha1.PhaseCompleted:
			return progress, true, nil
		}
		return progress, false, nil
	})
}

// waitEchoReady waits until the Echo is Ready at generation gen or a
// later one: its workload renders that spec (status.observedGeneration)
// and the Ready condition was decided for it.
func (e *env) waitEchoReady(ctx context.Context, w *waitFlags, echo *echov1alpha1.Echo, gen int64) error {
	return e.waitFor(ctx, w.timeout, echo, func() (string, bool, error) {
		progress := fmt.Sprintf("Echo %s: generation %d (observed %d)", echo.Name, gen, echo.Status.ObservedGeneration)
		ready := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady)
		if ready == nil {
			return progress + ": Ready not reported yet", false, nil
		}
		progress += fmt.Sprintf(": Ready %s (%s): %s", ready.Status, ready.Reason, ready.Message)
		done := ready.Status == metav1.ConditionTrue && ready.ObservedGeneration >= gen && echo.Status.ObservedGeneration >= gen
		return progress, done, nil
	})
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
