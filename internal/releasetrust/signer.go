package releasetrust

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// SignatureAnnotation holds a release Secret's signature: the scheme
	// version, a colon and the base64 of the HMAC.
	SignatureAnnotation = "echo.dev/release-signature"

	// schemeVersion names the canonical form signed below; a change to it
	// needs a new version, with which older signatures stop verifying.
	// v2 covers the UID of the record's controller, the Echo it belongs to:
	// a record copied from a deleted Echo does not verify under a new Echo
	// of the same name.
	schemeVersion = "v2"
	// legacySchemeVersion is v1, which did not cover the owner. Its records
	// verify only when they were created before the operator first signed
	// with v2 (Signer.legacyBefore): those the operator wrote itself, never
	// a copy a tenant creates later.
	legacySchemeVersion = "v1"

	// ReleaseDataKey holds the encoded release in a release Secret, as
	// Helm's Secrets driver stores it.
	ReleaseDataKey = "release"

	// KeySize is the size of a signing key in bytes.
	KeySize = 32
)

// unsignedLabels are the labels Helm stamps with the time of a write; they
// steer nothing.
var unsignedLabels = map[string]bool{"createdAt": true, "modifiedAt": true}

// Signer signs and verifies release Secrets with one key.
type Signer struct {
	key []byte
	// legacyBefore is when the operator first signed with schemeVersion:
	// records of the legacy scheme verify only if created before it.
	legacyBefore time.Time
}

// NewSigner returns a signer with key, which must be KeySize bytes or more,
// that trusts no record of the legacy scheme.
func NewSigner(key []byte) (*Signer, error) {
	return newSigner(key, time.Time{})
}

func newSigner(key []byte, legacyBefore time.Time) (*Signer, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("a release signing key needs at least %d bytes, this one has %d", KeySize, len(key))
	}
	return &Signer{key: slices.Clone(key), legacyBefore: legacyBefore}, nil
}

// Sign sets the signature annotation of a release Secret about to be
// written. It must be the last change made to the Secret.
func (s *Signer) Sign(secret *corev1.Secret) {
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[SignatureAnnotation] = schemeVersion + ":" + base64.StdEncoding.EncodeToString(s.mac(secret, schemeVersion))
}

// Verify reports whether a release Secret carries a valid signature of
// this key: it was written by the operator and not changed since.
func (s *Signer) Verify(secret *corev1.Secret) bool {
	version, encoded, ok := strings.Cut(secret.Annotations[SignatureAnnotation], ":")
	switch {
	case !ok || encoded == "":
		return false
	case version == legacySchemeVersion && !secret.CreationTimestamp.Time.Before(s.legacyBefore):
		return false
	case version != schemeVersion && version != legacySchemeVersion:
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return false
	}
	return hmac.Equal(sig, s.mac(secret, version))
}

// mac is the HMAC of a Secret's canonical form: every field length-prefixed,
// so that no two different Secrets write the same bytes. The release is
// hashed as stored (encoded), so a record is verified before anything
// decompresses or parses it.
func (s *Signer) mac(secret *corev1.Secret, version string) []byte {
	h := s.newMAC()
	writeField(h, "scheme", version)
	writeField(h, "namespace", secret.Namespace)
	writeField(h, "name", secret.Name)
	if version != legacySchemeVersion {
		writeField(h, "owner", string(controllerUID(secret)))
	}
	keys := slices.Sorted(maps.Keys(secret.Labels))
	for _, k := range keys {
		if !unsignedLabels[k] {
			writeField(h, "label:"+k, secret.Labels[k])
		}
	}
	writeField(h, "type", string(secret.Type))
	writeField(h, "release", string(secret.Data[ReleaseDataKey]))
	return h.Sum(nil)
}

// newMAC is an HMAC-SHA256 keyed with the signer's key: the one home of
// the key's use, for release records and Jobs alike.
func (s *Signer) newMAC() hash.Hash {
	return hmac.New(sha256.New, s.key)
}

// controllerUID is the UID of the object that controls secret, if any.
func controllerUID(secret *corev1.Secret) types.UID {
	if ref := metav1.GetControllerOfNoCopy(secret); ref != nil {
		return ref.UID
	}
	return ""
}

func writeField(h hash.Hash, name, value string) {
	_, _ = fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(value))
	_, _ = h.Write([]byte(value))
}
