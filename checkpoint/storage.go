package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Storage is where a Store keeps its files: a local directory (the
// default) or a prefix in an object store (registered by the binary,
// RegisterScheme). Names are slash-separated and relative to the store's
// root: "chk-3/window-0.arrow", "chk-3/_metadata.json", "leader-epoch".
//
// The one guarantee a checkpoint's atomicity rests on: an object written
// by Create (or WriteFile) is visible only once complete, whole or not at
// all, also across a crash. The Store writes every part first and the
// manifest last, so a checkpoint without a manifest is incomplete and
// ignored. Implementations are safe for concurrent use.
type Storage interface {
	// Create begins object name; it appears whole at Commit. An
	// object store replaces an existing object of that name; the local
	// directory refuses it (two writers of one part).
	Create(name string) (ObjectWriter, error)
	// WriteFile writes name whole or not at all (local: a temporary
	// file, fsync, rename, fsync of the directory).
	WriteFile(name string, data []byte) error
	// ReadFile reads object name; a missing one is fs.ErrNotExist.
	ReadFile(name string) ([]byte, error)
	// Stat returns the size of object name; a missing one (or a
	// directory) is fs.ErrNotExist.
	Stat(name string) (int64, error)
	// List returns the entries directly under dir ("" the root, else a
	// name ending in "/"), sorted: objects by name, and each deeper
	// level once, as its name with a trailing "/" (object stores: a
	// delimiter listing). A dir holding nothing is fs.ErrNotExist.
	List(dir string) ([]string, error)
	// Remove removes object name, or with a trailing "/" everything
	// under that prefix; a missing one is no error.
	Remove(name string) error
	// Path names name for people and error messages: a file path, or a
	// URL (never a credential).
	Path(name string) string
}

// ObjectWriter is an object being written (Storage.Create).
type ObjectWriter interface {
	io.Writer
	// Commit makes the object visible and durable whole.
	Commit() error
	// Abort drops it.
	Abort() error
}

// dirStorage is a Storage with real directories (the local one): a
// checkpoint's directory is made at Begin and synced at Commit, and Join
// can tell that another process began the checkpoint.
type dirStorage interface {
	Storage
	Mkdir(name string) error
	IsDir(name string) bool
	SyncDir(name string) error
}

// Opener opens the Storage of a URL (scheme://bucket/prefix).
type Opener func(url string) (Storage, error)

var (
	schemesMu sync.RWMutex
	schemes   = map[string]Opener{}
)

// RegisterScheme makes NewStore, OpenStorage and OpenDir accept URLs of
// scheme (s3, gs, azure: the binary registers the object stores' opener
// at startup; the checkpoint package itself reaches only local
// directories). Registering a scheme again replaces its opener.
func RegisterScheme(scheme string, open Opener) {
	schemesMu.Lock()
	defer schemesMu.Unlock()
	schemes[strings.ToLower(scheme)] = open
}

// IsURL reports whether loc names a store by URL (scheme://...) rather
// than a local directory; file:// is a local directory.
func IsURL(loc string) bool {
	scheme, _, ok := strings.Cut(loc, "://")
	return ok && !strings.EqualFold(scheme, "file") && scheme != "" && !strings.ContainsAny(scheme, `/\`)
}

// OpenStorage opens the Storage at loc: a local directory (created if
// needed), file://DIR, or a URL of a registered scheme.
func OpenStorage(loc string) (Storage, error) { return openStorage(loc, true) }

// openStorage is OpenStorage; without create a local directory is not
// made.
func openStorage(loc string, create bool) (Storage, error) {
	if !IsURL(loc) {
		if rest, ok := strings.CutPrefix(loc, "file://"); ok {
			loc = rest
		}
		if create {
			if err := os.MkdirAll(loc, 0o755); err != nil {
				return nil, fmt.Errorf("checkpoint: %w", err)
			}
		}
		return LocalStorage(loc), nil
	}
	scheme, _, _ := strings.Cut(loc, "://")
	schemesMu.RLock()
	open := schemes[strings.ToLower(scheme)]
	schemesMu.RUnlock()
	if open == nil {
		schemesMu.RLock()
		var known []string
		for s := range schemes {
			known = append(known, s+"://")
		}
		schemesMu.RUnlock()
		slices.Sort(known)
		return nil, fmt.Errorf("checkpoint: %s: unknown scheme %s:// (a local directory%s)", loc, scheme, strings.Join(append([]string{""}, known...), ", "))
	}
	st, err := open(loc)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", loc, err)
	}
	return st, nil
}

// splitLoc splits a checkpoint's location into its store's and its own
// name: /d/chk-3 is (/d, chk-3), s3://b/p/chk-3 is (s3://b/p, chk-3).
func splitLoc(loc string) (parent, base string) {
	if IsURL(loc) {
		loc = strings.TrimRight(loc, "/")
		i := strings.LastIndexByte(loc, '/')
		if i < len("s3://") || loc[i-1] == '/' {
			return loc, "" // the bucket's root
		}
		return loc[:i], loc[i+1:]
	}
	loc = filepath.Clean(strings.TrimPrefix(loc, "file://"))
	return filepath.Dir(loc), filepath.Base(loc)
}

// errNotRegular is Stat's error for a directory or device in place of a
// file.
var errNotRegular = errors.New("not a regular file")

// LocalStorage is the Storage of a local directory.
type LocalStorage string

var _ dirStorage = LocalStorage("")

func (l LocalStorage) file(name string) string {
	return filepath.Join(string(l), filepath.FromSlash(name))
}

// Path is the file path of name.
func (l LocalStorage) Path(name string) string { return l.file(name) }

// Create writes the file in place: it counts only once the manifest (or
// a rename by the caller) names it, so no temporary name is needed. An
// existing file is an error: a part is written once.
func (l LocalStorage) Create(name string) (ObjectWriter, error) {
	p := l.file(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &localObject{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

type localObject struct {
	f *os.File
	w *bufio.Writer
}

func (o *localObject) Write(b []byte) (int, error) { return o.w.Write(b) }

// Commit flushes and fsyncs the file (its directory entry is synced by
// the Store before the manifest is written).
func (o *localObject) Commit() error {
	err := o.w.Flush()
	if err == nil {
		if err = o.f.Sync(); err != nil {
			err = fmt.Errorf("fsync: %w", err)
		}
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (o *localObject) Abort() error {
	o.f.Close()
	return os.Remove(o.f.Name())
}

// WriteFile writes name atomically: temporary file, fsync, rename, fsync
// of the directory.
func (l LocalStorage) WriteFile(name string, data []byte) error {
	p := l.file(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return writeFileAtomic(p, data)
}

func (l LocalStorage) ReadFile(name string) ([]byte, error) { return os.ReadFile(l.file(name)) }

func (l LocalStorage) Stat(name string) (int64, error) {
	st, err := os.Stat(l.file(name))
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, &fs.PathError{Op: "stat", Path: l.file(name), Err: errNotRegular}
	}
	return st.Size(), nil
}

func (l LocalStorage) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(l.file(dir))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		switch {
		case e.IsDir():
			out = append(out, e.Name()+"/")
		case e.Type().IsRegular():
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func (l LocalStorage) Remove(name string) error {
	var err error
	if strings.HasSuffix(name, "/") {
		err = os.RemoveAll(l.file(name))
	} else {
		err = os.Remove(l.file(name))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l LocalStorage) Mkdir(name string) error { return os.Mkdir(l.file(name), 0o755) }

func (l LocalStorage) IsDir(name string) bool {
	st, err := os.Stat(l.file(name))
	return err == nil && st.IsDir()
}

func (l LocalStorage) SyncDir(name string) error { return syncDir(l.file(name)) }

// ListFlat turns a flat listing of keys (an object store's) into List's
// answer for dir: the keys directly under dir, and each deeper level once
// with a trailing "/". Object-store Storages use it.
func ListFlat(keys []string, dir string) []string {
	var out []string
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, dir)
		if !ok || rest == "" {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i+1]
		}
		if len(out) == 0 || out[len(out)-1] != rest {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// joinName joins storage names with slashes.
func joinName(elem ...string) string { return path.Join(elem...) }

// JoinLoc joins a store location (a local directory or a URL) with more
// names: filepath.Join for a directory, slashes for a URL (whose "//"
// filepath.Join would fold).
func JoinLoc(loc string, elem ...string) string {
	if !IsURL(loc) {
		return filepath.Join(append([]string{loc}, elem...)...)
	}
	scheme, rest, _ := strings.Cut(loc, "://")
	return scheme + "://" + strings.TrimRight(rest, "/") + "/" + strings.Trim(path.Join(elem...), "/")
}

// AbsLoc makes a local directory absolute; a URL stays as it is.
func AbsLoc(loc string) (string, error) {
	if IsURL(loc) {
		return loc, nil
	}
	return filepath.Abs(strings.TrimPrefix(loc, "file://"))
}
