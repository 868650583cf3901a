package releasetrust

import corev1 "k8s.io/api/core/v1"

// verdictKey records, in the cache's copy of a release Secret, whether the
// Secret verified when it was cached. The cache drops a release Secret's
// data (see releaserecords.CacheTransform), so the verdict is taken
// once, when the whole Secret is at hand. The key holds a '/', which no
// key of a Secret stored by the API server can: a tenant cannot forge it,
// and a copy that has it was transformed already.
const verdictKey = "echo.dev/verified"

// MarkCachedCopy replaces the data of a release Secret's cache copy with
// the verdict alone; the caller may add what else the cache keeps.
func MarkCachedCopy(secret *corev1.Secret, verified bool) {
	v := "false"
	if verified {
		v = "true"
	}
	secret.Data = map[string][]byte{verdictKey: []byte(v)}
	secret.StringData = nil
}

// IsCachedCopy reports whether a Secret is a cache copy made by
// MarkCachedCopy.
func IsCachedCopy(secret *corev1.Secret) bool {
	_, ok := secret.Data[verdictKey]
	return ok
}

// CachedVerified reports whether a cache copy of a release Secret verified.
// A Secret that is not such a copy did not.
func CachedVerified(secret *corev1.Secret) bool {
	return string(secret.Data[verdictKey]) == "true"
}
