package releasetrust

import (
	"crypto/hmac"
	"encoding/base64"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The Jobs the operator runs (backups, restore inspections, restores and
// artifact deletions) have deterministic names, and anyone who may create
// Jobs in a namespace may create one of such a name first, with a
// controller reference naming the owner (whose UID anyone who reads it
// knows). The operator signs each Job it creates with the key it signs
// release records with, over what identifies the work: the namespace, the
// Job's name, and the kind and UID of the object it works for. A signature
// copied from one of its Jobs verifies only on a Job of that very name, in
// that namespace, for that very object.

const (
	// JobSignatureAnnotation holds the signature of a Job the operator
	// created: the scheme version, a colon and the base64 of the HMAC.
	JobSignatureAnnotation = "echo.dev/job-signature"

	// jobSchemeVersion names the canonical form of a Job signed below; a
	// change to it needs a new version, with which older signatures stop
	// verifying.
	jobSchemeVersion = "job-v1"
)

// SignJob sets the signature annotation of a Job about to be created for
// the object of kind ownerKind and UID ownerUID (the backup or restore it
// works for, whether or not it controls the Job).
func (s *Signer) SignJob(job metav1.Object, ownerKind string, ownerUID types.UID) {
	annotations := job.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[JobSignatureAnnotation] = jobSchemeVersion + ":" + base64.StdEncoding.EncodeToString(s.jobMAC(job, ownerKind, ownerUID))
	job.SetAnnotations(annotations)
}

// VerifyJob reports whether a Job carries a valid signature of this key for
// the object of kind ownerKind and UID ownerUID: the operator created a Job
// of that name, in that namespace, for that object.
func (s *Signer) VerifyJob(job metav1.Object, ownerKind string, ownerUID types.UID) bool {
	version, encoded, ok := strings.Cut(job.GetAnnotations()[JobSignatureAnnotation], ":")
	if !ok || version != jobSchemeVersion || encoded == "" {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return false
	}
	return hmac.Equal(sig, s.jobMAC(job, ownerKind, ownerUID))
}

// jobMAC is the HMAC of a Job's canonical form, its fields length-prefixed
// as a release record's are. The scheme comes first, so that no Job's form
// is ever a release record's.
func (s *Signer) jobMAC(job metav1.Object, ownerKind string, ownerUID types.UID) []byte {
	h := s.newMAC()
	writeField(h, "scheme", jobSchemeVersion)
	writeField(h, "namespace", job.GetNamespace())
	writeField(h, "name", job.GetName())
	writeField(h, "ownerKind", ownerKind)
	writeField(h, "ownerUID", string(ownerUID))
	return h.Sum(nil)
}
