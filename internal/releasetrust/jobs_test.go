package releasetrust

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// signedJob is the backup Job b1-backup of namespace team-a, signed for
// the EchoBackup of UID backup-uid.
func signedJob(s *Signer) *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b1-backup"}}
	s.SignJob(job, "EchoBackup", "backup-uid")
	return job
}

func TestSignerVerifyJob(t *testing.T) {
	s := newTestSigner(t, testKey)
	for _, tc := range []struct {
		name      string
		change    func(*batchv1.Job)
		kind      string
		uid       types.UID
		otherKey  bool
		wantValid bool
	}{
		{name: "as signed", kind: "EchoBackup", uid: "backup-uid", wantValid: true},
		{name: "what else a Job holds is not signed", change: func(j *batchv1.Job) {
			j.Labels = map[string]string{"made-by": "tenant"}
			j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "mover", Image: "elsewhere"}}
		}, kind: "EchoBackup", uid: "backup-uid", wantValid: true},
		{name: "the signature copied onto a Job of another name", change: func(j *batchv1.Job) { j.Name = "b2-backup" },
			kind: "EchoBackup", uid: "backup-uid"},
		{name: "the signature copied onto a Job of another namespace", change: func(j *batchv1.Job) { j.Namespace = "team-b" },
			kind: "EchoBackup", uid: "backup-uid"},
		{name: "verified for another owner of the same name", kind: "EchoBackup", uid: "later-backup-uid"},
		{name: "verified for an owner of another kind with that UID", kind: "EchoRestore", uid: "backup-uid"},
		{name: "unsigned", change: func(j *batchv1.Job) { j.Annotations = nil }, kind: "EchoBackup", uid: "backup-uid"},
		{name: "another scheme version", change: func(j *batchv1.Job) {
			j.Annotations[JobSignatureAnnotation] = "v2:" + strings.SplitN(j.Annotations[JobSignatureAnnotation], ":", 2)[1]
		}, kind: "EchoBackup", uid: "backup-uid"},
		{name: "not base64", change: func(j *batchv1.Job) { j.Annotations[JobSignatureAnnotation] = jobSchemeVersion + ":!!" },
			kind: "EchoBackup", uid: "backup-uid"},
		{name: "another key", kind: "EchoBackup", uid: "backup-uid", otherKey: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := signedJob(s)
			if tc.change != nil {
				tc.change(job)
			}
			verifier := s
			if tc.otherKey {
				verifier = newTestSigner(t, "another key of thirty-two bytes!")
			}
			if got := verifier.VerifyJob(job, tc.kind, tc.uid); got != tc.wantValid {
				t.Errorf("VerifyJob = %v, want %v", got, tc.wantValid)
			}
		})
	}
}

// TestJobSignatureIsNoRecordSignature: a Job's signature and a release
// record's are of different schemes, and neither verifies as the other.
func TestJobSignatureIsNoRecordSignature(t *testing.T) {
	s := newTestSigner(t, testKey)
	job := signedJob(s)
	rec := record("web")
	rec.Annotations = map[string]string{SignatureAnnotation: job.Annotations[JobSignatureAnnotation]}
	if s.Verify(rec) {
		t.Error("a Job's signature verifies a release record")
	}
	s.Sign(rec)
	job.Annotations[JobSignatureAnnotation] = rec.Annotations[SignatureAnnotation]
	if s.VerifyJob(job, "EchoBackup", "backup-uid") {
		t.Error("a release record's signature verifies a Job")
	}
}
