package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// jobOwnerScheme knows Jobs and the operator's kinds.
func jobOwnerScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := echov1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// ownedBy is a Job of the backup's Job name, with the operator's labels,
// that owner controls (nil: that nothing does).
func ownedBy(owner *echov1alpha1.EchoBackup, uid types.UID) *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup", UID: uid,
		Labels: backupLabels(&echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1"}, Spec: echov1alpha1.EchoBackupSpec{EchoName: "e1"}})}}
	if owner != nil {
		job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, echov1alpha1.GroupVersion.WithKind("EchoBackup"))}
	}
	return job
}

func TestOwnJob(t *testing.T) {
	owner := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "backup-uid"}}
	earlier := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "earlier-backup-uid"}}
	recorded := []echov1alpha1.JobReference{{Name: "b1-backup", UID: "job-uid"}}
	for _, tc := range []struct {
		name  string
		owner *echov1alpha1.EchoBackup
		jobs  []echov1alpha1.JobReference
		job   *batchv1.Job
		want  bool
	}{
		{"the recorded Job", owner, recorded, ownedBy(owner, "job-uid"), true},
		{"the recorded Job, whatever its owner references say", owner, recorded, ownedBy(nil, "job-uid"), true},
		{"another Job of the recorded name, though it names the owner as its controller", owner, recorded, ownedBy(owner, "planted-uid"), false},
		{"nothing recorded: a Job the owner controls (the status write was lost)", owner, nil, ownedBy(owner, "job-uid"), true},
		{"nothing recorded: a Job with the operator's labels that nothing controls", owner, nil, ownedBy(nil, "planted-uid"), false},
		{"nothing recorded: the Job of an earlier owner of the same name", owner, nil, ownedBy(earlier, "old-uid"), false},
		{"another name recorded", owner, []echov1alpha1.JobReference{{Name: "b1-delete", UID: "job-uid"}}, ownedBy(owner, "job-uid"), true},
		{"no owner (a delete Job), nothing recorded", nil, nil, ownedBy(nil, "job-uid"), false},
		{"no owner (a delete Job), recorded", nil, recorded, ownedBy(nil, "job-uid"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o client.Object
			if tc.owner != nil {
				o = tc.owner
			}
			if got := ownJob(o, tc.jobs, tc.job); got != tc.want {
				t.Errorf("ownJob = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRecordJob(t *testing.T) {
	var jobs []echov1alpha1.JobReference
	recordJob(&jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "b1-backup", UID: "u1"}})
	recordJob(&jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "b1-delete", UID: "u2"}})
	recordJob(&jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "b1-delete", UID: "u3"}})
	want := []echov1alpha1.JobReference{{Name: "b1-backup", UID: "u1"}, {Name: "b1-delete", UID: "u3"}}
	if len(jobs) != len(want) || jobs[0] != want[0] || jobs[1] != want[1] {
		t.Errorf("jobs = %+v, want %+v: one record a name, the latest Job's", jobs, want)
	}
}

// TestEnsureOwnedJobRefusesAPlantedJob: a Job a tenant created under the
// backup's Job name, whether or not the cache holds it (it does not without
// the managed-by label), is refused and left as it was.
func TestEnsureOwnedJobRefusesAPlantedJob(t *testing.T) {
	scheme := jobOwnerScheme(t)
	owner := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "backup-uid"}}
	for _, cached := range []bool{true, false} {
		planted := ownedBy(nil, "")
		planted.Spec.Template.Spec = moverPodSpec()
		api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(planted.DeepCopy()).Build()
		cache := api
		if !cached {
			cache = fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(createIn(api)).Build()
		}
		want := ownedBy(nil, "")
		want.Spec.Template.Spec = moverPodSpec()
		var jobs []echov1alpha1.JobReference
		job, created, err := ensureOwnedJob(context.Background(), cache, api, scheme, owner, &jobs, want, func(context.Context) error { return nil })
		refused, ok := asJobNotOwned(err)
		if !ok || job != nil || created {
			t.Fatalf("cached %v: got job %v, created %v, err %v; want a *jobNotOwned", cached, job, created, err)
		}
		if msg := refused.message("EchoBackup b1", ""); !strings.Contains(msg, "Job b1-backup in namespace ns") ||
			!strings.Contains(msg, "kubectl delete job -n ns b1-backup") {
			t.Errorf("the message names the Job and what to do: %s", msg)
		}
		if len(jobs) != 0 {
			t.Errorf("cached %v: recorded %+v, want nothing", cached, jobs)
		}
		left := &batchv1.Job{}
		if err := api.Get(context.Background(), client.ObjectKeyFromObject(planted), left); err != nil || len(left.OwnerReferences) != 0 {
			t.Errorf("cached %v: the planted Job is left as it was: %v, owners %v", cached, err, left.OwnerReferences)
		}
	}
}

// createIn makes Create go to api, as it goes to the API server while Get
// reads the cache.
func createIn(api client.Client) interceptor.Funcs {
	return interceptor.Funcs{Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return api.Create(ctx, obj, opts...)
	}}
}

func TestEnsureOwnedJobRecordsTheJobItCreates(t *testing.T) {
	scheme := jobOwnerScheme(t)
	owner := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "backup-uid"}}
	// The fake client gives no UID; the API server gives one to every object.
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			obj.SetUID("created-uid")
			return c.Create(ctx, obj, opts...)
		}}).Build()
	var jobs []echov1alpha1.JobReference
	want := ownedBy(nil, "")
	job, created, err := ensureOwnedJob(context.Background(), c, c, scheme, owner, &jobs, want, func(context.Context) error { return nil })
	if err != nil || !created || job.UID == "" {
		t.Fatalf("got job %v, created %v, err %v", job, created, err)
	}
	if !metav1.IsControlledBy(job, owner) {
		t.Errorf("the Job is controlled by its backup: %v", job.OwnerReferences)
	}
	if len(jobs) != 1 || jobs[0] != (echov1alpha1.JobReference{Name: "b1-backup", UID: job.UID}) {
		t.Errorf("recorded %+v, want the Job's UID", jobs)
	}
	again, created, err := ensureOwnedJob(context.Background(), c, c, scheme, owner, &jobs, ownedBy(nil, ""), func(context.Context) error {
		return errors.New("not asked again")
	})
	if err != nil || created || again.UID != job.UID {
		t.Errorf("the next reconcile takes the recorded Job: %v, created %v, err %v", again, created, err)
	}
}

// TestRemoveOwnJobSparesAPlantedJob: a finished backup or restore removes
// its own Job, never one of that name it did not create.
func TestRemoveOwnJobSparesAPlantedJob(t *testing.T) {
	scheme := jobOwnerScheme(t)
	planted := ownedBy(nil, "")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(planted).Build()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(planted), planted); err != nil {
		t.Fatal(err)
	}
	for _, jobs := range [][]echov1alpha1.JobReference{nil, {{Name: "b1-backup", UID: "another-uid"}}} {
		if err := removeOwnJob(context.Background(), c, "ns", jobs, "b1-backup"); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(planted), &batchv1.Job{}); err != nil {
			t.Errorf("record %+v: the planted Job is left: %v", jobs, err)
		}
	}
	if err := removeOwnJob(context.Background(), c, "ns", []echov1alpha1.JobReference{{Name: "b1-backup", UID: planted.UID}}, "b1-backup"); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(planted), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the recorded Job is removed: %v", err)
	}
}
