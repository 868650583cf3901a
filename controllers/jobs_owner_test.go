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
	"github.com/echo-operator/echo-operator/internal/releasetrust"
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

// testJobSigner signs the Jobs of the unit tests.
func testJobSigner(t *testing.T) *releasetrust.Signer {
	t.Helper()
	s, err := releasetrust.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOwnJob(t *testing.T) {
	signer := testJobSigner(t)
	owner := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "backup-uid"}}
	earlier := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "earlier-backup-uid"}}
	recorded := []echov1alpha1.JobReference{{Name: "b1-backup", UID: "job-uid"}}
	// signedFor is ownedBy(controller, uid), signed for w.
	signedFor := func(w jobWork, controller *echov1alpha1.EchoBackup, uid types.UID) *batchv1.Job {
		job := ownedBy(controller, uid)
		w.sign(job)
		return job
	}
	// copiedFrom is ownedBy(controller, "planted-uid"), bearing the
	// signature of the Job of name that w signed.
	copiedFrom := func(name string, w jobWork, controller *echov1alpha1.EchoBackup) *batchv1.Job {
		original := ownedBy(nil, "job-uid")
		original.Name = name
		w.sign(original)
		job := ownedBy(controller, "planted-uid")
		job.Annotations = original.Annotations
		return job
	}
	backup, deletion := backupWork(signer, owner), deleteWork(signer, owner)
	for _, tc := range []struct {
		name string
		work jobWork
		jobs []echov1alpha1.JobReference
		job  *batchv1.Job
		want bool
	}{
		{"the recorded Job", backup, recorded, ownedBy(owner, "job-uid"), true},
		{"the recorded Job, whatever its owner references say", backup, recorded, ownedBy(nil, "job-uid"), true},
		{"another Job of the recorded name, though it names the owner as its controller", backup, recorded, ownedBy(owner, "planted-uid"), false},
		{"another Job of the recorded name, signed (a copied signature)", backup, recorded, signedFor(backup, owner, "planted-uid"), false},
		{"nothing recorded: a signed Job the owner controls (the status write was lost)", backup, nil, signedFor(backup, owner, "job-uid"), true},
		{"nothing recorded: a Job with a forged controller reference to the owner", backup, nil, ownedBy(owner, "planted-uid"), false},
		{"nothing recorded: a Job with the operator's labels that nothing controls", backup, nil, ownedBy(nil, "planted-uid"), false},
		{"nothing recorded: a signed Job the owner does not control", backup, nil, signedFor(backup, nil, "planted-uid"), false},
		{"nothing recorded: the signed Job of an earlier owner of the same name", backup, nil, signedFor(backupWork(signer, earlier), owner, "old-uid"), false},
		{"nothing recorded: a Job the owner controls, bearing the signature of its delete Job", backup, nil, copiedFrom("b1-delete", deletion, owner), false},
		{"another name recorded", backup, []echov1alpha1.JobReference{{Name: "b1-delete", UID: "job-uid"}}, signedFor(backup, owner, "job-uid"), true},
		{"a delete Job, nothing recorded, unsigned", deletion, nil, ownedBy(nil, "job-uid"), false},
		{"a delete Job, nothing recorded, signed (the status write was lost)", deletion, nil, signedFor(deletion, nil, "job-uid"), true},
		{"a delete Job, nothing recorded, signed for an earlier backup of the same name", deletion, nil,
			signedFor(deleteWork(signer, earlier), nil, "job-uid"), false},
		{"a delete Job, recorded", deletion, recorded, ownedBy(nil, "job-uid"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownJob(tc.work, tc.jobs, tc.job); got != tc.want {
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
		job, created, err := ensureOwnedJob(context.Background(), cache, api, scheme, backupWork(testJobSigner(t), owner), &jobs, want,
			func(context.Context) error { return nil })
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
	w := backupWork(testJobSigner(t), owner)
	job, created, err := ensureOwnedJob(context.Background(), c, c, scheme, w, &jobs, want, func(context.Context) error { return nil })
	if err != nil || !created || job.UID == "" {
		t.Fatalf("got job %v, created %v, err %v", job, created, err)
	}
	if !metav1.IsControlledBy(job, owner) || !w.signed(job) {
		t.Errorf("the Job is controlled by its backup, and signed: %v, %v", job.OwnerReferences, job.Annotations)
	}
	if len(jobs) != 1 || jobs[0] != (echov1alpha1.JobReference{Name: "b1-backup", UID: job.UID}) {
		t.Errorf("recorded %+v, want the Job's UID", jobs)
	}
	again, created, err := ensureOwnedJob(context.Background(), c, c, scheme, w, &jobs, ownedBy(nil, ""), func(context.Context) error {
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
