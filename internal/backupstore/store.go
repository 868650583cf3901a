package backupstore

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
	// ETag is the store's version of the object's content when it has
	// one (S3's entity tag, without quotes); empty otherwise.
	ETag string
}

// Store keeps objects under slash-separated keys. Implementations classify
// their errors with the package's sentinels: a missing object is
// ErrNotFound, refused credentials ErrAccessDenied, an unreachable or
// failing service ErrUnavailable, a full disk ErrNoSpace.
type Store interface {
	// Put stores everything r yields under key, streaming: the size is not
	// known in advance and memory use does not grow with it. The object
	// appears whole or not at all; an existing object is replaced.
	Put(ctx context.Context, key string, r io.Reader) error
	// Get opens the object for reading. The caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat describes the object.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes the object; removing a missing object is not an
	// error.
	Delete(ctx context.Context, key string) error
	// List returns the objects whose keys start with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Walk calls fn with each object whose key starts with prefix, in
	// the store's order (S3's is by key, a filesystem's directory by
	// directory), without holding the listing; it stops at fn's first
	// error and returns it.
	Walk(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Location names key for people and logs, e.g. s3://bucket/key; it
	// never contains credentials.
	Location(key string) string
}

// incompleteUploadAborter is a Store whose Put may leave parts behind when
// the process is killed mid-upload (S3 multipart uploads).
type incompleteUploadAborter interface {
	// AbortIncompleteUpload removes the parts of every unfinished upload
	// of key.
	AbortIncompleteUpload(ctx context.Context, key string) error
}

// AbortIncompleteUpload removes what an earlier, killed upload of key left
// behind, in the stores that can leave anything.
func AbortIncompleteUpload(ctx context.Context, s Store, key string) error {
	if a, ok := s.(incompleteUploadAborter); ok {
		return a.AbortIncompleteUpload(ctx, key)
	}
	return nil
}

// CheckKey validates a store key: non-empty, relative, slash-separated,
// without empty, "." or ".." elements. Backup keys are checked by Backup and
// Restore before any I/O, so that no key can leave a store's root.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	}
	if strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("%w: key %q contains a backslash or NUL", ErrInvalidArgument, key)
	}
	for _, elem := range strings.Split(key, "/") {
		switch elem {
		case "", ".", "..":
			return fmt.Errorf("%w: key %q must be relative, without empty, \".\" or \"..\" elements", ErrInvalidArgument, key)
		}
	}
	return nil
}

// checkPrefix validates a List prefix: empty, or a key with an optional
// trailing slash.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return CheckKey(strings.TrimSuffix(prefix, "/"))
}
