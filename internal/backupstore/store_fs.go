package backupstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// CopyBufferSize is the buffer of every copy loop of the stores and the
// data mover.
const CopyBufferSize = 1 << 20

// fsStorePerm and FSStoreDirPerm are the modes of objects and key
// directories in a filesystem store.
const (
	fsStorePerm    = 0o640
	FSStoreDirPerm = 0o750
	tmpMarker      = ".tmp-"
)

// FSStore keeps objects as files below a root directory, typically a
// mounted PVC: key "a/b" is the file <root>/a/b. Every access goes through
// an os.Root, so no key can reach outside the root. Put writes a hidden
// temporary file next to the target, fsyncs it, renames it into place and
// fsyncs the directory, so an object is either complete or absent.
type FSStore struct {
	dir string
}

var _ Store = (*FSStore)(nil)

// NewFSStore returns a store rooted at dir, which must be an existing
// directory.
func NewFSStore(dir string) (*FSStore, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: filesystem store root is empty", ErrInvalidArgument)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: filesystem store root %q: %w", ErrInvalidArgument, dir, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, ClassifyFS(fmt.Errorf("filesystem store root: %w", err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%w: filesystem store root %s is not a directory", ErrInvalidArgument, abs)
	}
	return &FSStore{dir: abs}, nil
}

// Location returns the object's path.
func (s *FSStore) Location(key string) string {
	return filepath.Join(s.dir, filepath.FromSlash(key))
}

func (s *FSStore) open() (*os.Root, error) {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, ClassifyFS(fmt.Errorf("open filesystem store: %w", err))
	}
	return root, nil
}

// Put implements Store. Errors returned by r are passed through unchanged.
func (s *FSStore) Put(ctx context.Context, key string, r io.Reader) (err error) {
	if err := CheckKey(key); err != nil {
		return err
	}
	root, err := s.open()
	if err != nil {
		return err
	}
	defer CloseInto(&err, root, "close filesystem store")
	dir, base := path.Split(key)
	if dir != "" {
		if err := root.MkdirAll(dir, FSStoreDirPerm); err != nil {
			return ClassifyFS(fmt.Errorf("create %s: %w", s.Location(dir), err))
		}
	}
	tmp := dir + "." + base + tmpMarker + randomHex()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fsStorePerm)
	if err != nil {
		return ClassifyFS(fmt.Errorf("create %s: %w", s.Location(tmp), err))
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if err := copyToFile(ctx, f, r); err != nil {
		var werr *writeError
		if errors.As(err, &werr) {
			return ClassifyFS(fmt.Errorf("write %s: %w", s.Location(key), werr.err))
		}
		return err
	}
	if err := f.Sync(); err != nil {
		return ClassifyFS(fmt.Errorf("sync %s: %w", s.Location(key), err))
	}
	if err := f.Close(); err != nil {
		return ClassifyFS(fmt.Errorf("close %s: %w", s.Location(key), err))
	}
	if err := root.Rename(tmp, key); err != nil {
		return ClassifyFS(fmt.Errorf("rename into %s: %w", s.Location(key), err))
	}
	if err := SyncRootDir(root, dir); err != nil {
		return ClassifyFS(fmt.Errorf("sync %s: %w", s.Location(dir), err))
	}
	return nil
}

// writeError marks a failed write in copyToFile.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// copyToFile copies r to f with a large buffer, returning read errors as
// they are and write errors as *writeError.
func copyToFile(ctx context.Context, f *os.File, r io.Reader) error {
	buf := make([]byte, CopyBufferSize)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				return &writeError{err: err}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// Get implements Store; the returned reader is the object's file.
func (s *FSStore) Get(_ context.Context, key string) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	root, err := s.open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }() // an open file outlives its Root
	f, err := root.Open(key)
	if err != nil {
		return nil, ClassifyFS(fmt.Errorf("open %s: %w", s.Location(key), err))
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("open %s: %w", s.Location(key), ErrNotFound)
	}
	if err != nil {
		_ = f.Close()
		return nil, ClassifyFS(err)
	}
	return f, nil
}

// Stat implements Store. A directory is not an object: ErrNotFound.
func (s *FSStore) Stat(_ context.Context, key string) (info ObjectInfo, err error) {
	if err := CheckKey(key); err != nil {
		return ObjectInfo{}, err
	}
	root, err := s.open()
	if err != nil {
		return ObjectInfo{}, err
	}
	defer CloseInto(&err, root, "close filesystem store")
	fi, err := root.Stat(key)
	if err != nil {
		return ObjectInfo{}, ClassifyFS(fmt.Errorf("stat %s: %w", s.Location(key), err))
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.Location(key), ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete implements Store. The directory is fsynced after the removal, so
// that deletions persist in the order they were made.
func (s *FSStore) Delete(_ context.Context, key string) (err error) {
	if err := CheckKey(key); err != nil {
		return err
	}
	root, err := s.open()
	if err != nil {
		return err
	}
	defer CloseInto(&err, root, "close filesystem store")
	if err := root.Remove(key); err != nil {
		// ENOTDIR: a parent is a file, so the object cannot exist either.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return ClassifyFS(fmt.Errorf("delete %s: %w", s.Location(key), err))
	}
	if err := SyncRootDir(root, path.Dir(key)); err != nil {
		return ClassifyFS(fmt.Errorf("sync %s: %w", s.Location(path.Dir(key)), err))
	}
	return nil
}

// RemoveKeyDir removes the directory of a deleted backup's key: first the
// temporary files that interrupted writes of the named objects left in it,
// then the directory itself if that emptied it. Anything else keeps the
// directory, and a key that is not a directory is left alone.
func (s *FSStore) RemoveKeyDir(key string, names []string) (err error) {
	if err := CheckKey(key); err != nil {
		return err
	}
	root, err := s.open()
	if err != nil {
		return err
	}
	defer CloseInto(&err, root, "close filesystem store")
	info, err := root.Lstat(key)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()) {
		return nil
	}
	if err != nil {
		return ClassifyFS(fmt.Errorf("stat %s: %w", s.Location(key), err))
	}
	if err := s.removeTemps(root, key, names); err != nil {
		return err
	}
	if err := root.Remove(key); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return nil
		}
		return ClassifyFS(fmt.Errorf("delete %s: %w", s.Location(key), err))
	}
	return SyncRootDir(root, path.Dir(key))
}

// List implements Store. Temporary files of unfinished Puts are not listed.
func (s *FSStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := s.Walk(ctx, prefix, func(o ObjectInfo) error {
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// errStopWalk ends a walk of the filesystem early: fn's error is
// returned instead.
type errStopWalk struct{ err error }

func (e errStopWalk) Error() string { return e.err.Error() }

// Walk implements Store: directory by directory, each in lexical order.
// Temporary files of unfinished Puts are not listed. Objects have no
// ETag: their size and time tell their versions apart.
func (s *FSStore) Walk(ctx context.Context, prefix string, fn func(ObjectInfo) error) (err error) {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	root, err := s.open()
	if err != nil {
		return err
	}
	defer CloseInto(&err, root, "close filesystem store")
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = prefix[:i]
	}
	walkErr := fs.WalkDir(root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || isTempName(d.Name()) || !strings.HasPrefix(p, prefix) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listing
		}
		if err != nil {
			return err
		}
		if err := fn(ObjectInfo{Key: p, Size: info.Size(), ModTime: info.ModTime()}); err != nil {
			return errStopWalk{err}
		}
		return nil
	})
	var stop errStopWalk
	if errors.As(walkErr, &stop) {
		return stop.err
	}
	if walkErr != nil {
		return ClassifyFS(fmt.Errorf("list %s: %w", s.Location(prefix), walkErr))
	}
	return nil
}

// AbortIncompleteUpload removes the temporary files of unfinished Puts of
// key, which a process killed mid-Put leaves behind.
func (s *FSStore) AbortIncompleteUpload(_ context.Context, key string) (err error) {
	if err := CheckKey(key); err != nil {
		return err
	}
	root, err := s.open()
	if err != nil {
		return err
	}
	defer CloseInto(&err, root, "close filesystem store")
	dir, base := path.Split(key)
	err = s.removeTemps(root, path.Clean(dir), []string{base})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// removeTemps removes, in directory dir of root, the temporary files of
// unfinished Puts of the named objects.
func (s *FSStore) removeTemps(root *os.Root, dir string, names []string) error {
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return ClassifyFS(fmt.Errorf("read %s: %w", s.Location(dir), err))
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTempOf(e.Name(), names) {
			continue
		}
		if err := root.Remove(path.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ClassifyFS(fmt.Errorf("delete %s: %w", s.Location(path.Join(dir, e.Name())), err))
		}
	}
	return nil
}

func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tmpMarker)
}

// isTempOf reports whether name is a temporary file of a Put of one of the
// named objects.
func isTempOf(name string, objects []string) bool {
	for _, o := range objects {
		if strings.HasPrefix(name, "."+o+tmpMarker) {
			return true
		}
	}
	return false
}

// ClassifyFS marks filesystem errors with the package's sentinels.
func ClassifyFS(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrNotFound):
		return WithKind(ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return WithKind(ErrAccessDenied, err)
	}
	return ClassifyLocal(err)
}

// SyncRootDir fsyncs directory dir ("" for the root itself) of root.
func SyncRootDir(root *os.Root, dir string) error {
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// CloseInto closes c and records a close error in *err unless an earlier
// error is already there.
func CloseInto(err *error, c io.Closer, what string) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("%s: %w", what, cerr)
	}
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
