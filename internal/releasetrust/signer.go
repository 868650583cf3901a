package releasetrust

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

const (
	// SignatureAnnotation holds a release Secret's signature: the scheme
	// version, a colon and the base64 of the HMAC.
	SignatureAnnotation = "echo.dev/release-signature"

	// schemeVersion names the canonical form signed below; a change to it
	// needs a new version, with which older signatures stop verifying.
	schemeVersion = "v1"

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
}

// NewSigner returns a signer with key, which must be KeySize bytes or more.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("a release signing key needs at least %d bytes, this one has %d", KeySize, len(key))
	}
	return &Signer{key: slices.Clone(key)}, nil
}

// Sign sets the signature annotation of a release Secret about to be
// written. It must be the last change made to the Secret.
func (s *Signer) Sign(secret *corev1.Secret) {
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[SignatureAnnotation] = schemeVersion + ":" + base64.StdEncoding.EncodeToString(s.mac(secret))
}

// Verify reports whether a release Secret carries a valid signature of
// this key: it was written by the operator and not changed since.
func (s *Signer) Verify(secret *corev1.Secret) bool {
	got := secret.Annotations[SignatureAnnotation]
	prefix := schemeVersion + ":"
	if len(got) <= len(prefix) || got[:len(prefix)] != prefix {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(got[len(prefix):])
	if err != nil {
		return false
	}
	return hmac.Equal(sig, s.mac(secret))
}

// mac is the HMAC of a Secret's canonical form: every field length-prefixed,
// so that no two different Secrets write the same bytes. The release is
// hashed as stored (encoded), so a record is verified before anything
// decompresses or parses it.
func (s *Signer) mac(secret *corev1.Secret) []byte {
	h := hmac.New(sha256.New, s.key)
	writeField(h, "scheme", schemeVersion)
	writeField(h, "namespace", secret.Namespace)
	writeField(h, "name", secret.Name)
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

func writeField(h hash.Hash, name, value string) {
	_, _ = fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(value))
	_, _ = h.Write([]byte(value))
}
