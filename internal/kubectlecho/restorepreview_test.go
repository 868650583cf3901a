package kubectlecho

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestPreviewRestore(t *testing.T) {
	done := backupWith(completed)
	done.Spec.Storage.LocationRef = &echov1alpha1.LocationReference{Name: "offsite"}
	done.Status.Size, done.Status.Files, done.Status.EchoGeneration = 48213, 3, 4
	location := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "offsite"}}
	echo := func(persistent bool, annotations map[string]string) *echov1alpha1.Echo {
		e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: annotations}}
		if persistent {
			e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true}
		}
		return e
	}
	for _, tc := range []struct {
		name         string
		objs         []client.Object
		to           string
		existingData echov1alpha1.ExistingDataPolicy
		want         []string
		problems     []string
	}{
		{
			name: "into a new Echo",
			objs: []client.Object{done, location}, to: "copy",
			want: []string{"b1 of Echo web, completed", "48213 bytes, 3 files, Echo generation 4", "EchoBackupLocation offsite, at none",
				"Echo copy does not exist: the restore creates it with the configuration Echo web had at generation 4",
				"API server:     accepts the EchoRestore (dry run)", "The restore would start"},
		},
		{
			name: "in place, existing data refused",
			objs: []client.Object{done, location, echo(true, nil)}, to: "web", existingData: echov1alpha1.ExistingDataFail,
			want: []string{"Echo web exists: the restore restores in place",
				"Fail: if Echo web's volume holds data, the restore refuses to write over it and fails with TargetHasData; --existing-data Replace replaces it"},
		},
		{
			name: "in place, existing data replaced, after another restore",
			objs: []client.Object{done, location, echo(true, map[string]string{echov1alpha1.RestoreAnnotation: "other"})}, to: "web",
			existingData: echov1alpha1.ExistingDataReplace,
			want:         []string{"EchoRestore other is restoring it now, and this restore would wait", "Replace: the data in Echo web's volume is replaced, the old data kept aside"},
		},
		{
			name: "every reason it fails",
			objs: []client.Object{backupWith(running, failed), echo(false, nil)}, to: "web",
			problems: []string{"EchoBackup b1 failed (JobFailed), so there is nothing to restore: The backup Job failed: \\x1b[2Jexit 1"},
		},
		{
			name: "a missing location, data and no volume",
			objs: []client.Object{done, echo(false, nil)}, to: "web",
			problems: []string{"EchoBackupLocation offsite, where the backup is stored, does not exist in namespace ns: the restore would fail with LocationUnavailable",
				"Echo web keeps no data but the backup holds 3 files: the restore would fail with TargetHasNoVolume"},
		},
		{
			name:     "no backup",
			to:       "web",
			problems: []string{"EchoBackup b1 does not exist in namespace ns"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t, tc.objs...)
			opts := restoreOptions{to: tc.to, existingData: tc.existingData, dryRun: true}
			if opts.existingData == "" {
				opts.existingData = echov1alpha1.ExistingDataFail
			}
			err := te.previewRestore(context.Background(), "b1", opts, output(t, "", false))
			got := te.out.String()
			expectTerminalSafe(t, got)
			for _, want := range append(tc.want, tc.problems...) {
				if !strings.Contains(got, want) {
					t.Errorf("no %q in:\n%s", want, got)
				}
			}
			if (err != nil) != (len(tc.problems) > 0) {
				t.Errorf("error %v, want one: %v", err, len(tc.problems) > 0)
			}
			if len(tc.problems) > 0 && strings.Count(got, "\n  - ") != len(tc.problems) {
				t.Errorf("want %d reasons in:\n%s", len(tc.problems), got)
			}
			restores := &echov1alpha1.EchoRestoreList{}
			if err := te.client.List(context.Background(), restores); err != nil || len(restores.Items) != 0 {
				t.Errorf("the dry run wrote %d EchoRestores (%v)", len(restores.Items), err)
			}
		})
	}
}

// TestPreviewRestorePrintsTheObject: with -o, a dry run prints the
// EchoRestore the API server would create on stdout, and the preview on
// stderr.
func TestPreviewRestorePrintsTheObject(t *testing.T) {
	done := backupWith(completed)
	te := newTestEnv(t, done)
	opts := restoreOptions{to: "copy", existingData: echov1alpha1.ExistingDataReplace, dryRun: true}
	if err := te.previewRestore(context.Background(), "b1", opts, output(t, "json", false)); err != nil {
		t.Fatal(err)
	}
	var rs echov1alpha1.EchoRestore
	if err := json.Unmarshal(te.out.Bytes(), &rs); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, te.out)
	}
	if rs.Kind != "EchoRestore" || rs.Spec.Source.BackupName != "b1" || rs.Spec.EchoName != "copy" || rs.Spec.ExistingData != echov1alpha1.ExistingDataReplace {
		t.Errorf("printed %+v", rs)
	}
	if !strings.Contains(te.errOut.String(), "Target:         Echo copy does not exist") {
		t.Errorf("the preview is not on stderr:\n%s", te.errOut)
	}
}
