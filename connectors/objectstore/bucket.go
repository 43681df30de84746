package objectstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// bucket is the little a sink needs of a store. Keys are object keys
// (local: file paths). Implementations are safe for concurrent use.
type bucket interface {
	// Create begins an object at key; it exists (durably) only after the
	// upload's Commit.
	Create(ctx context.Context, key string) (upload, error)
	// Move publishes src as dst: a server-side copy, then src is deleted
	// (a rename on a file system). Redoing a finished Move succeeds: when
	// src is gone and dst exists, Move does nothing. A missing src
	// without dst is errNotFound.
	Move(ctx context.Context, src, dst string) error
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// List returns every key that starts with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Exists reports whether key exists.
	Exists(ctx context.Context, key string) (bool, error)
	// String names the bucket in errors (never a credential).
	String() string
	Close() error
}

// upload is an object being written.
type upload interface {
	io.Writer
	// Commit makes the object durable at its key.
	Commit(ctx context.Context) error
	// Abort drops it.
	Abort() error
}

var errNotFound = errors.New("not found")

// move is Move for stores with a server-side copy: copy src to dst, then
// delete src; redone after a crash between the two, the copy is simply
// repeated.
func move(ctx context.Context, b bucket, copyObj func(ctx context.Context, src, dst string) error, notFound func(error) bool, src, dst string) error {
	err := copyObj(ctx, src, dst)
	if err != nil && notFound(err) {
		ok, xerr := b.Exists(ctx, dst)
		if xerr != nil {
			return xerr
		}
		if ok {
			return nil // published before
		}
		return fmt.Errorf("%s: %w", src, errNotFound)
	}
	if err != nil {
		return err
	}
	return b.Delete(ctx, src)
}

// localDir is a bucket on the local file system (format parquet with a
// path without a scheme). Move is a rename.
type localDir struct{}

func (localDir) String() string { return "local file system" }

func (localDir) Close() error { return nil }

func (localDir) Create(_ context.Context, key string) (upload, error) {
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(key)
	if err != nil {
		return nil, err
	}
	return &localUpload{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

type localUpload struct {
	f *os.File
	w *bufio.Writer
}

func (u *localUpload) Write(p []byte) (int, error) { return u.w.Write(p) }

func (u *localUpload) Commit(context.Context) error {
	err := u.w.Flush()
	if err == nil {
		err = u.f.Sync()
	}
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(u.f.Name()))
	}
	return err
}

func (u *localUpload) Abort() error {
	u.f.Close()
	return os.Remove(u.f.Name())
}

func (localDir) Move(_ context.Context, src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if _, serr := os.Stat(dst); serr == nil {
			return nil // published before
		}
		return fmt.Errorf("%s: %w", src, errNotFound)
	}
	return syncDir(filepath.Dir(dst))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

func (localDir) Delete(_ context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (localDir) Exists(_ context.Context, key string) (bool, error) {
	_, err := os.Stat(key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// List walks the directory the prefix names (prefixes here always end in
// a separator).
func (localDir) List(_ context.Context, prefix string) ([]string, error) {
	root := filepath.Dir(prefix + "x")
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// spool is an upload to a remote store: the object is written to an
// unlinked temporary file (nothing is left behind by a crash) and sent
// in one request at Commit, so that the store never holds part of it.
type spool struct {
	f    *os.File
	w    *bufio.Writer
	n    int64
	put  func(ctx context.Context, f *os.File, size int64) error
	done bool
}

func newSpool(put func(ctx context.Context, f *os.File, size int64) error) (*spool, error) {
	f, err := os.CreateTemp("", "clink-parquet-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // the open descriptor keeps it until Close
	return &spool{f: f, w: bufio.NewWriterSize(f, 1<<20), put: put}, nil
}

func (s *spool) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

func (s *spool) Commit(ctx context.Context) error {
	defer s.Abort()
	if err := s.w.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return s.put(ctx, s.f, s.n)
}

func (s *spool) Abort() error {
	if s.done {
		return nil
	}
	s.done = true
	return s.f.Close()
}
