package finalbackup

import (
	"context"
	"strings"
	"testing"

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
