package finalbackup

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func echoWithPolicy(policy *echov1alpha1.FinalBackupSpec) *echov1alpha1.Echo {
	e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: types.UID("0123456789abcdef")}}
	if policy != nil {
		e.Spec.Backup = &echov1alpha1.EchoBackupPolicy{BeforeDelete: policy}
	}
	return e
}

func finalBackupOf(e *echov1alpha1.Echo, complete bool) *echov1alpha1.EchoBackup {
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: Name(e), Labels: map[string]string{echov1alpha1.FinalBackupOfLabel: e.Name}},
		Spec:       echov1alpha1.EchoBackupSpec{EchoName: e.Name},
	}
	if complete {
		b.Status.Conditions = []metav1.Condition{{Type: echov1alpha1.BackupConditionComplete, Status: metav1.ConditionTrue}}
	}
	return b
}

func TestPending(t *testing.T) {
	storage := &echov1alpha1.BackupStorage{}
	wanted := echoWithPolicy(&echov1alpha1.FinalBackupSpec{Enabled: true, Storage: storage})
	otherEchoBackup := finalBackupOf(wanted, true)
	otherEchoBackup.Spec.EchoName = "other"
	tests := []struct {
		name    string
		echo    *echov1alpha1.Echo
		objects []client.Object
		want    bool
	}{
		{name: "no policy", echo: echoWithPolicy(nil)},
		{name: "turned off", echo: echoWithPolicy(&echov1alpha1.FinalBackupSpec{Enabled: false, Storage: storage})},
		{name: "no storage", echo: echoWithPolicy(&echov1alpha1.FinalBackupSpec{Enabled: true})},
		{name: "wanted, not started", echo: wanted, want: true},
		{name: "wanted, running", echo: wanted, objects: []client.Object{finalBackupOf(wanted, false)}, want: true},
		{name: "wanted, complete", echo: wanted, objects: []client.Object{finalBackupOf(wanted, true)}},
		{name: "a complete backup of that name for another Echo", echo: wanted, objects: []client.Object{otherEchoBackup}, want: true},
	}
	scheme := runtime.NewScheme()
	if err := echov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objects...).Build()
			got, err := Pending(context.Background(), c, tt.echo)
			if err != nil || got != tt.want {
				t.Errorf("Pending = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestForeign(t *testing.T) {
	deletion := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	echo := echoWithPolicy(nil)
	echo.DeletionTimestamp = &deletion
	backup := func(mutate func(*echov1alpha1.EchoBackup)) *echov1alpha1.EchoBackup {
		b := finalBackupOf(echo, true)
		b.CreationTimestamp = deletion
		mutate(b)
		return b
	}
	for _, tc := range []struct {
		name   string
		backup *echov1alpha1.EchoBackup
		want   string
	}{
		{"the final backup", backup(func(*echov1alpha1.EchoBackup) {}), ""},
		{"created later", backup(func(b *echov1alpha1.EchoBackup) { b.CreationTimestamp = metav1.NewTime(deletion.Add(time.Minute)) }), ""},
		{"of another Echo", backup(func(b *echov1alpha1.EchoBackup) { b.Spec.EchoName = "other" }), "it backs up Echo other"},
		{"without the label", backup(func(b *echov1alpha1.EchoBackup) { b.Labels = nil }), "it lacks the label echo.dev/final-backup-of=web"},
		{"created before the deletion", backup(func(b *echov1alpha1.EchoBackup) { b.CreationTimestamp = metav1.NewTime(deletion.Add(-time.Hour)) }),
			"it was created at 2026-01-02T02:04:05Z, before the Echo's deletion began"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Foreign(tc.backup, echo); got != tc.want {
				t.Errorf("Foreign = %q, want %q", got, tc.want)
			}
			if got, want := Done(tc.backup, echo), tc.want == ""; got != want {
				t.Errorf("Done = %v, want %v: a complete backup that is not the Echo's final backup is not done", got, want)
			}
		})
	}
}

func TestNameIsTheEchoObjects(t *testing.T) {
	a := echoWithPolicy(nil)
	b := a.DeepCopy()
	b.UID = "fedcba9876543210"
	if Name(a) == Name(b) {
		t.Errorf("two Echo objects of one name share the final backup name %s", Name(a))
	}
	if !strings.HasPrefix(Name(a), "web-final-01234567") {
		t.Errorf("Name = %s", Name(a))
	}
	long := a.DeepCopy()
	long.Name = strings.Repeat("e", 53)
	if n := Name(long); len(n) > 63 {
		t.Errorf("Name of a 53-character Echo is %d characters long", len(n))
	}
}

func TestEchoOf(t *testing.T) {
	e := echoWithPolicy(nil)
	if got := EchoOf(context.Background(), finalBackupOf(e, false)); len(got) != 1 || got[0].Name != "web" || got[0].Namespace != "team" {
		t.Errorf("EchoOf(final backup) = %v", got)
	}
	if got := EchoOf(context.Background(), &echov1alpha1.EchoBackup{}); got != nil {
		t.Errorf("EchoOf(another backup) = %v", got)
	}
}
