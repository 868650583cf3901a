package kubectlecho

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// restorePreview is what `restore --dry-run` found: the lines that say
// what the restore would do, and every reason it would fail.
type restorePreview struct {
	fields   [][2]string
	problems []string
}

func (p *restorePreview) field(name, format string, args ...any) {
	p.fields = append(p.fields, [2]string{name, fmt.Sprintf(format, args...)})
}

func (p *restorePreview) fail(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

// previewRestore shows what restoring backup into opts.to would do and
// every reason it would fail, and has the API server check the
// EchoRestore with a dry run (admission included): it writes nothing.
// With -o the EchoRestore the API server would create is printed and the
// preview goes to stderr. It fails when the restore would.
func (e *env) previewRestore(ctx context.Context, backup string, opts restoreOptions, out *outputFlags) error {
	p := &restorePreview{}
	b := e.previewBackup(ctx, backup, p)
	e.previewTarget(ctx, b, opts, p)
	rs := e.restoreOf(backup, opts)
	if err := e.client.Create(ctx, rs, client.DryRunAll); err != nil {
		p.field("API server", "refuses the EchoRestore")
		p.fail("The API server refuses the EchoRestore: %v", err)
	} else {
		p.field("API server", "accepts the EchoRestore%s (dry run)", strings.TrimRight(" "+rs.Name, " "))
	}
	w := e.streams.Out
	if !out.human() {
		w = e.streams.ErrOut
	}
	if err := p.print(w, backup, opts.to); err != nil {
		return err
	}
	if !out.human() && len(p.problems) == 0 {
		if err := e.printObject(out, rs); err != nil {
			return err
		}
	}
	if len(p.problems) > 0 {
		return fmt.Errorf("the restore would fail, for %d reason(s): see above", len(p.problems))
	}
	return nil
}

func (p *restorePreview) print(w io.Writer, backup, to string) error {
	if _, err := fmt.Fprintf(w, "Restoring EchoBackup %s into Echo %s (dry run: nothing is written)\n", terminalSafe(backup), terminalSafe(to)); err != nil {
		return err
	}
	if err := printFields(w, p.fields); err != nil {
		return err
	}
	if len(p.problems) == 0 {
		_, err := fmt.Fprintln(w, "The restore would start: run the command without --dry-run to restore")
		return err
	}
	if _, err := fmt.Fprintln(w, "The restore would fail:"); err != nil {
		return err
	}
	for _, problem := range p.problems {
		if _, err := fmt.Fprintf(w, "  - %s\n", terminalSafe(problem)); err != nil {
			return err
		}
	}
	return nil
}

// previewBackup describes the backup to restore and its storage; nil
// when it cannot be read.
func (e *env) previewBackup(ctx context.Context, name string, p *restorePreview) *echov1alpha1.EchoBackup {
	b := &echov1alpha1.EchoBackup{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, b); err != nil {
		if apierrors.IsNotFound(err) {
			p.field("Backup", "EchoBackup %s does not exist in namespace %s", name, e.namespace)
			p.fail("EchoBackup %s does not exist in namespace %s: kubectl get echobackups lists them, kubectl echo backups the stored ones", name, e.namespace)
		} else {
			p.field("Backup", "not read: %v", err)
			p.fail("Reading EchoBackup %s: %v", name, err)
		}
		return nil
	}
	phase, reason := echov1alpha1.BackupPhase(b.Status.Conditions)
	switch phase {
	case echov1alpha1.PhaseCompleted:
		completed := "completed"
		if t := b.Status.CompletionTime; t != nil {
			completed += " " + t.UTC().Format(time.RFC3339)
		}
		p.field("Backup", "%s of Echo %s, %s: %d bytes, %s, Echo generation %d",
			b.Name, b.Spec.EchoName, completed, b.Status.Size, files(b.Status.Files), b.Status.EchoGeneration)
	case echov1alpha1.PhaseFailed:
		p.field("Backup", "%s of Echo %s, Failed (%s)", b.Name, b.Spec.EchoName, reason)
		p.fail("EchoBackup %s failed (%s), so there is nothing to restore: %s", b.Name, reason, orNone(firstOf(b.Status.Error, phaseMessage(b.Status.Conditions))))
	default:
		p.field("Backup", "%s of Echo %s, %s (%s)", b.Name, b.Spec.EchoName, phase, reason)
		p.fail("EchoBackup %s is %s, not Completed: restore it once it has completed (kubectl echo backup --wait waits for a backup)", b.Name, phase)
	}
	if !b.DeletionTimestamp.IsZero() {
		p.fail("EchoBackup %s is being deleted: the restore would find it gone", b.Name)
	}
	e.previewStorage(ctx, b, p)
	return b
}

// previewStorage describes where the backup is stored, and fails when its
// EchoBackupLocation is gone.
func (e *env) previewStorage(ctx context.Context, b *echov1alpha1.EchoBackup, p *restorePreview) {
	name := b.Spec.Storage.LocationName()
	if name == "" {
		p.field("Storage", "the backup's own storage, at %s", orNone(b.Status.Location))
		return
	}
	err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, &echov1alpha1.EchoBackupLocation{})
	switch {
	case err == nil:
		p.field("Storage", "EchoBackupLocation %s, at %s", name, orNone(b.Status.Location))
	case apierrors.IsNotFound(err):
		p.field("Storage", "EchoBackupLocation %s, which does not exist", name)
		p.fail("EchoBackupLocation %s, where the backup is stored, does not exist in namespace %s: the restore would fail with %s; create it again",
			name, e.namespace, echov1alpha1.RestoreReasonLocationUnavailable)
	default:
		p.field("Storage", "EchoBackupLocation %s, not read: %v", name, err)
	}
}

// previewTarget says whether the restore creates the Echo or restores in
// place into it, and what becomes of the data it holds.
func (e *env) previewTarget(ctx context.Context, b *echov1alpha1.EchoBackup, opts restoreOptions, p *restorePreview) {
	echo := &echov1alpha1.Echo{}
	err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: opts.to}, echo)
	switch {
	case apierrors.IsNotFound(err):
		from := "the backed-up configuration"
		if b != nil {
			from = fmt.Sprintf("the configuration Echo %s had at generation %d", b.Spec.EchoName, b.Status.EchoGeneration)
		}
		p.field("Target", "Echo %s does not exist: the restore creates it with %s, then restores the data into it", opts.to, from)
		p.field("Existing data", "none: a new Echo holds no data to refuse or replace")
		return
	case err != nil:
		p.field("Target", "Echo %s not read: %v", opts.to, err)
		p.fail("Reading Echo %s: %v", opts.to, err)
		return
	}
	if !echo.DeletionTimestamp.IsZero() {
		p.field("Target", "Echo %s exists and is being deleted", opts.to)
		p.fail("Echo %s is being deleted: the restore would fail with %s; restore into it once it is gone, and the restore creates it anew",
			opts.to, echov1alpha1.RestoreReasonEchoDeleted)
		return
	}
	if !persistentEcho(echo) {
		p.field("Target", "Echo %s exists and keeps no data (spec.persistence is off): the restore restores in place", opts.to)
		if b != nil && b.Status.Files > 0 {
			p.field("Existing data", "none, and no volume for the backup's %s", files(b.Status.Files))
			p.fail("Echo %s keeps no data but the backup holds %s: the restore would fail with %s; enable spec.persistence on it, or restore into a new Echo",
				opts.to, files(b.Status.Files), echov1alpha1.RestoreReasonNoVolume)
		} else {
			p.field("Existing data", "none: the Echo keeps no data and the backup holds none")
		}
		return
	}
	target := fmt.Sprintf("Echo %s exists: the restore restores in place, with no pod running until the data is in place", opts.to)
	if holder := echo.Annotations[echov1alpha1.RestoreAnnotation]; holder != "" {
		target += fmt.Sprintf("; EchoRestore %s is restoring it now, and this restore would wait until it is done", holder)
	}
	p.field("Target", "%s", target)
	switch opts.existingData {
	case echov1alpha1.ExistingDataReplace:
		p.field("Existing data", "Replace: the data in Echo %s's volume is replaced, the old data kept aside in its data directory (.echo-pre-restore-<time>)", opts.to)
	default:
		p.field("Existing data", "%s: if Echo %s's volume holds data, the restore refuses to write over it and fails with %s; "+
			"--existing-data %s replaces it, keeping the old data aside", opts.existingData, opts.to, echov1alpha1.RestoreReasonTargetHasData, echov1alpha1.ExistingDataReplace)
	}
}

// files is "1 file" or "n files".
func files(n int64) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// persistentEcho reports whether an Echo keeps its data in a volume.
func persistentEcho(echo *echov1alpha1.Echo) bool {
	return echo.Spec.Persistence != nil && echo.Spec.Persistence.Enabled
}
