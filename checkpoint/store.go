package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Compression selects how part files compress their Arrow buffers.
type Compression int

const (
	// CompressLZ4 compresses buffers with LZ4 frames (Arrow IPC body
	// compression), leaving a buffer raw when it saves less than 10 %:
	// the default, several times cheaper to write than ZSTD for about
	// 1.7x the bytes (docs/performance.md#checkpoints).
	CompressLZ4 Compression = iota
	// CompressZstd compresses buffers with ZSTD.
	CompressZstd
	// CompressNone writes buffers as they are.
	CompressNone
)

// Options configure a Store. The zero value is the default.
type Options struct {
	// MaxParallelism is the number of key groups (default 128).
	MaxParallelism int
	// Compression of part files (default LZ4).
	Compression Compression
	// Allocator for writing (default: a vector.Pool recycling up to 64 MiB).
	Allocator memory.Allocator
}

// Store keeps checkpoints in a Storage (a local directory, or a prefix in
// an object store), one directory (prefix) chk-<id> per checkpoint. A
// checkpoint is complete exactly when its manifest exists.
//
// One process writes a store at a time. A Store is safe for concurrent use.
type Store struct {
	dir  string
	fs   Storage
	opts Options

	mu     sync.Mutex
	active map[uint64]*Writer // checkpoints this Store is writing
}

// NewStore opens (creating if needed) the store in dir: a local
// directory, or a URL of a registered scheme (RegisterScheme).
func NewStore(dir string, opts Options) (*Store, error) {
	if opts.MaxParallelism < 0 || opts.MaxParallelism > maxMaxParallelism || opts.Compression < CompressLZ4 || opts.Compression > CompressNone {
		return NewStoreOn(nil, dir, opts) // the same errors, before any I/O
	}
	st, err := OpenStorage(dir)
	if err != nil {
		return nil, err
	}
	return NewStoreOn(st, dir, opts)
}

// NewStoreOn opens the store kept in st; loc names it (Dir).
func NewStoreOn(st Storage, loc string, opts Options) (*Store, error) {
	if opts.MaxParallelism == 0 {
		opts.MaxParallelism = DefaultMaxParallelism
	}
	if opts.MaxParallelism < 1 || opts.MaxParallelism > maxMaxParallelism {
		return nil, fmt.Errorf("checkpoint: max parallelism %d out of [1, %d]", opts.MaxParallelism, maxMaxParallelism)
	}
	if opts.Compression < CompressLZ4 || opts.Compression > CompressNone {
		return nil, fmt.Errorf("checkpoint: unknown compression %d", opts.Compression)
	}
	if opts.Allocator == nil {
		// The IPC writer's compressed bodies and the parts' own columns
		// are allocated and freed at every checkpoint: recycling them
		// saves the garbage collector and the runtime's zeroing of fresh
		// pages (~15 % of a full snapshot's CPU at 1 M groups).
		opts.Allocator = vector.NewPool(memory.DefaultAllocator, 64<<20)
	}
	if st == nil {
		return nil, errors.New("checkpoint: no storage")
	}
	return &Store{dir: loc, fs: st, opts: opts, active: map[uint64]*Writer{}}, nil
}

// Dir is the store's directory (or URL).
func (s *Store) Dir() string { return s.dir }

// Storage is where the store keeps its files.
func (s *Store) Storage() Storage { return s.fs }

// Path is the directory of checkpoint id.
func (s *Store) Path(id uint64) string { return s.fs.Path(chkName(id)) }

// chkName is the storage name of checkpoint id's directory.
func chkName(id uint64) string { return "chk-" + strconv.FormatUint(id, 10) }

// syncDir syncs directory name where the storage has directories.
func (s *Store) syncDir(name string) error {
	if d, ok := s.fs.(dirStorage); ok {
		return d.SyncDir(name)
	}
	return nil
}

// parseDirName returns the id of a chk-<id> name. Only the canonical
// decimal form counts; anything else in the store is left alone.
func parseDirName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "chk-")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 || strconv.FormatUint(id, 10) != s {
		return 0, false
	}
	return id, true
}

// Info is one checkpoint directory found in the store.
type Info struct {
	ID       uint64
	Complete bool // its manifest exists
	Path     string
}

// List returns the store's checkpoint directories, complete or not, by
// ascending id.
func (s *Store) List() ([]Info, error) {
	ents, err := s.fs.List("")
	if errors.Is(err, fs.ErrNotExist) && !s.isLocal() {
		ents, err = nil, nil // an object store's empty prefix
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []Info
	for _, e := range ents {
		name, isDir := strings.CutSuffix(e, "/")
		id, ok := parseDirName(name)
		if !ok || !isDir {
			continue
		}
		_, err := s.fs.Stat(joinName(name, ManifestName))
		complete := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errNotRegular) {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		out = append(out, Info{ID: id, Complete: complete, Path: s.fs.Path(name)})
	}
	slices.SortFunc(out, func(a, b Info) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out, nil
}

// Latest returns the newest complete checkpoint. It looks only at which
// manifests exist; Open checks their content.
func (s *Store) Latest() (id uint64, ok bool, err error) {
	list, err := s.List()
	if err != nil {
		return 0, false, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Complete {
			return list[i].ID, true, nil
		}
	}
	return 0, false, nil
}

// NextID is one more than the largest id of any checkpoint directory
// (complete or not) or of any checkpoint being written: an id Begin accepts.
func (s *Store) NextID() (uint64, error) {
	list, err := s.List()
	if err != nil {
		return 0, err
	}
	var max uint64
	if len(list) > 0 {
		max = list[len(list)-1].ID
	}
	s.mu.Lock()
	for id := range s.active {
		max = maxOf(max, id)
	}
	s.mu.Unlock()
	return max + 1, nil
}

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Retain keeps the newest n complete checkpoints and removes the older
// complete ones and every incomplete directory (crash debris), except the
// checkpoints this Store is writing and the part files a kept or written
// checkpoint's chains still need (their directories lose their manifest
// and every other file). n must be at least 1.
//
// A complete checkpoint is removed manifest first, so a crash halfway
// leaves an incomplete directory, never a damaged complete one.
func (s *Store) Retain(n int) error {
	if n < 1 {
		return fmt.Errorf("checkpoint: Retain(%d): must keep at least one checkpoint", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list, err := s.List()
	if err != nil {
		return err
	}
	var errs []error
	kept := 0
	// Files of older checkpoints that the kept ones build on (chains of
	// incremental checkpoints), and those of the parts being written.
	needed := map[uint64]map[string]bool{}
	need := func(ck uint64, file string) {
		if needed[ck] == nil {
			needed[ck] = map[string]bool{}
		}
		needed[ck][file] = true
	}
	for _, w := range s.active {
		w.mu.Lock()
		for _, p := range w.parts {
			for _, c := range p.info.Chain {
				need(c.Checkpoint, c.File)
			}
		}
		w.mu.Unlock()
	}
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		if _, writing := s.active[c.ID]; writing {
			continue
		}
		if c.Complete {
			if kept < n || s.pinned(c.ID) {
				kept++
				m, err := s.manifest(c.ID)
				if err != nil {
					// Unreadable: keep everything older rather than
					// break a chain it might need.
					errs = append(errs, err)
					return errors.Join(errs...)
				}
				for _, f := range m.Files() {
					if f.Checkpoint != c.ID {
						need(f.Checkpoint, f.File)
					}
				}
				continue
			}
			if err := s.fs.Remove(joinName(chkName(c.ID), ManifestName)); err != nil {
				errs = append(errs, fmt.Errorf("checkpoint: %w", err))
				continue
			}
			if err := s.syncDir(chkName(c.ID)); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if keep := needed[c.ID]; len(keep) > 0 {
			// A kept checkpoint builds on some of its parts: remove the
			// rest; the directory goes once no chain needs it.
			ents, err := s.fs.List(chkName(c.ID) + "/")
			if err != nil {
				errs = append(errs, fmt.Errorf("checkpoint: %w", err))
				continue
			}
			for _, e := range ents {
				if !keep[e] {
					if err := s.fs.Remove(joinName(chkName(c.ID), e) + suffixSlash(e)); err != nil {
						errs = append(errs, fmt.Errorf("checkpoint: %w", err))
					}
				}
			}
			continue
		}
		if err := s.fs.Remove(chkName(c.ID) + "/"); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint: %w", err))
		}
	}
	if err := s.syncDir(""); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// manifest reads the manifest of complete checkpoint id.
func (s *Store) manifest(id uint64) (*Manifest, error) {
	name := joinName(chkName(id), ManifestName)
	path := s.fs.Path(name)
	data, err := s.fs.ReadFile(name)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	return decodeManifest(path, id, data)
}

func (s *Store) isLocal() bool {
	_, ok := s.fs.(dirStorage)
	return ok
}

// suffixSlash is "/" for a List entry that is a directory (path.Join
// drops it).
func suffixSlash(entry string) string {
	if strings.HasSuffix(entry, "/") {
		return "/"
	}
	return ""
}

// Begin starts writing checkpoint id. An incomplete directory of the same
// id left by an earlier run is removed; a complete one is an error.
func (s *Store) Begin(id uint64) (*Writer, error) {
	if id == 0 {
		return nil, errors.New("checkpoint: id 0 is not a checkpoint id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, writing := s.active[id]; writing {
		return nil, fmt.Errorf("checkpoint %d: already being written", id)
	}
	dir := s.Path(id)
	name := chkName(id)
	if _, err := s.fs.Stat(joinName(name, ManifestName)); err == nil {
		return nil, fmt.Errorf("checkpoint %d: already exists (complete) in %s", id, dir)
	}
	if err := s.fs.Remove(name + "/"); err != nil {
		return nil, fmt.Errorf("checkpoint %d: removing an incomplete earlier attempt: %w", id, err)
	}
	if d, ok := s.fs.(dirStorage); ok {
		if err := d.Mkdir(name); err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", id, err)
		}
	}
	w := &Writer{store: s, id: id, dir: dir, name: name, parts: map[string]*PartWriter{}}
	s.active[id] = w
	return w, nil
}

// Join writes parts into checkpoint id, which another process began (in a
// cluster the Coordinator begins each checkpoint in the shared directory
// and Workers write their subtasks' parts). The joined Writer never removes
// the directory and never writes the manifest: Parts reports what it wrote,
// for the process that commits.
func (s *Store) Join(id uint64) (*Writer, error) {
	if id == 0 {
		return nil, errors.New("checkpoint: id 0 is not a checkpoint id")
	}
	dir := s.Path(id)
	name := chkName(id)
	if _, err := s.fs.Stat(joinName(name, ManifestName)); err == nil {
		return nil, fmt.Errorf("checkpoint %d: already complete in %s", id, dir)
	}
	// An object store has no directories: Begin leaves no trace there
	// to check.
	if d, ok := s.fs.(dirStorage); ok && !d.IsDir(name) {
		return nil, fmt.Errorf("checkpoint %d: %s was not begun (is the checkpoint directory shared?)", id, dir)
	}
	return &Writer{store: s, id: id, dir: dir, name: name, parts: map[string]*PartWriter{}, joined: true}, nil
}

// Writer writes one checkpoint: its parts, then (Commit) the manifest.
// Part, Commit and Abort are safe for concurrent use.
type Writer struct {
	store *Store
	id    uint64
	dir   string // for messages
	name  string // chk-<id>, in the store's Storage

	async sync.WaitGroup // Go's functions

	mu       sync.Mutex
	parts    map[string]*PartWriter // by file name
	open     int                    // parts not yet closed
	ended    bool                   // committed or aborted
	joined   bool                   // Join: parts only
	asyncErr error                  // the first failure of a Go function
}

// Go runs fn in a goroutine of its own: the part of a snapshot that
// encodes, compresses and writes what an operator captured at its barrier
// (asynchronous snapshots). Parts, Commit and Abort wait for every fn; an
// error fails the checkpoint.
func (w *Writer) Go(fn func() error) {
	w.async.Add(1)
	go func() {
		defer w.async.Done()
		if err := fn(); err != nil {
			w.mu.Lock()
			if w.asyncErr == nil {
				w.asyncErr = err
			}
			w.mu.Unlock()
		}
	}()
}

// Parts reports the parts written so far, sorted; every part must be
// closed without error. A joined Writer is finished by it.
func (w *Writer) Parts() ([]PartInfo, error) {
	w.async.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open > 0 {
		return nil, fmt.Errorf("checkpoint %d: %d part(s) not closed", w.id, w.open)
	}
	if w.joined {
		w.ended = true
	}
	if w.asyncErr != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", w.id, w.asyncErr)
	}
	out := make([]PartInfo, 0, len(w.parts))
	for _, p := range w.parts {
		if p.err != nil {
			return nil, fmt.Errorf("checkpoint %d: part failed: %w", w.id, p.err)
		}
		out = append(out, p.info)
	}
	sortParts(out)
	return out, nil
}

func sortParts(ps []PartInfo) {
	slices.SortFunc(ps, func(a, b PartInfo) int {
		if c := strings.Compare(a.Operator, b.Operator); c != 0 {
			return c
		}
		return a.Subtask - b.Subtask
	})
}

// ID is the checkpoint being written.
func (w *Writer) ID() uint64 { return w.id }

// Part creates the part file of one operator subtask with the given slots.
// Each (operator, subtask) has at most one part per checkpoint.
func (w *Writer) Part(operator string, subtask int, slots []Slot) (*PartWriter, error) {
	if err := checkOperatorName(operator); err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	if subtask < 0 {
		return nil, fmt.Errorf("checkpoint %d: operator %s: negative subtask %d", w.id, operator, subtask)
	}
	l, err := newLayout(slots)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: operator %s: %w", w.id, operator, err)
	}
	return w.part(operator, subtask, l)
}

func (w *Writer) part(operator string, subtask int, l *layout) (*PartWriter, error) {
	name := partFileName(operator, subtask)
	path := w.store.fs.Path(joinName(w.name, name))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return nil, fmt.Errorf("checkpoint %d: Part after Commit or Abort", w.id)
	}
	if _, dup := w.parts[name]; dup {
		return nil, fmt.Errorf("checkpoint %d: part %s created twice", w.id, name)
	}
	f, err := w.store.fs.Create(joinName(w.name, name))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	p, err := newPartWriter(w, operator, subtask, l, path, f)
	if err != nil {
		f.Abort()
		return nil, fmt.Errorf("checkpoint %d: %s: %w", w.id, path, err)
	}
	w.parts[name] = p
	w.open++
	return p, nil
}

func (w *Writer) partDone(p *PartWriter) {
	w.mu.Lock()
	w.open--
	w.mu.Unlock()
}

// Commit completes the checkpoint: every part must be closed without
// error. It syncs the directory, then writes the manifest last and
// atomically (temp file, fsync, rename, fsync of the directory). After
// Commit returns, successfully or not, the Writer is finished; a failed
// checkpoint stays incomplete (Abort or Retain removes it).
func (w *Writer) Commit(meta Meta) error {
	w.async.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return fmt.Errorf("checkpoint %d: Commit after Commit or Abort", w.id)
	}
	if w.joined {
		return fmt.Errorf("checkpoint %d: a joined Writer does not commit", w.id)
	}
	w.ended = true
	defer w.store.finish(w.id)
	if w.open > 0 {
		return fmt.Errorf("checkpoint %d: %d part(s) not closed", w.id, w.open)
	}
	if w.asyncErr != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, w.asyncErr)
	}
	m := Manifest{
		FormatVersion:  FormatVersion,
		CheckpointID:   w.id,
		Job:            meta.Job,
		Fingerprint:    meta.Fingerprint,
		Created:        time.Now().UTC(),
		MaxParallelism: w.store.opts.MaxParallelism,
		Properties:     meta.Properties,
		Parts:          make([]PartInfo, 0, len(w.parts)),
		Operators:      meta.Operators,
	}
	for _, p := range w.parts {
		if p.err != nil {
			return fmt.Errorf("checkpoint %d: part failed: %w", w.id, p.err)
		}
		m.Parts = append(m.Parts, p.info)
	}
	seen := map[string]bool{}
	for _, p := range m.Parts {
		seen[p.File] = true
	}
	for _, p := range meta.Parts {
		if seen[p.File] {
			return fmt.Errorf("checkpoint %d: part %s written twice", w.id, p.File)
		}
		seen[p.File] = true
		if _, err := w.store.fs.Stat(joinName(w.name, p.File)); err != nil {
			return fmt.Errorf("checkpoint %d: %w", w.id, err)
		}
		m.Parts = append(m.Parts, p)
	}
	sortParts(m.Parts)
	// The chains' files must still be there: retention runs between an
	// operator choosing its base and this commit.
	for _, p := range m.Parts {
		for _, c := range p.Chain {
			path := w.store.fs.Path(joinName(chkName(c.Checkpoint), c.File))
			if size, err := w.store.fs.Stat(joinName(chkName(c.Checkpoint), c.File)); err != nil || size != c.Bytes {
				return fmt.Errorf("checkpoint %d: %s subtask %d builds on %s, which is gone or changed", w.id, p.Operator, p.Subtask, path)
			}
		}
	}
	if m.Incremental() {
		m.FormatVersion = FormatVersionIncremental
	}
	data, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	data = append(data, '\n')
	// The parts' directory entries and the chk-<id> entry itself must be
	// durable before the manifest claims the checkpoint complete.
	// (An object store's objects are durable once their upload returns.)
	if err := w.store.syncDir(w.name); err != nil {
		return err
	}
	if err := w.store.syncDir(""); err != nil {
		return err
	}
	if err := w.store.CheckEpoch(meta.Epoch); err != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	if err := w.store.fs.WriteFile(joinName(w.name, ManifestName), data); err != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	return nil
}

// Abort abandons the checkpoint and removes its directory.
func (w *Writer) Abort() error {
	w.async.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	wasActive := !w.ended
	w.ended = true
	if w.joined {
		return nil // the directory is the committing process's
	}
	if wasActive {
		defer w.store.finish(w.id)
	}
	// Never remove a checkpoint that Commit completed.
	if _, err := w.store.fs.Stat(joinName(w.name, ManifestName)); err == nil {
		return fmt.Errorf("checkpoint %d: Abort after a successful Commit", w.id)
	}
	if err := w.store.fs.Remove(w.name + "/"); err != nil {
		return fmt.Errorf("checkpoint %d: %w", w.id, err)
	}
	return nil
}

func (s *Store) finish(id uint64) {
	s.mu.Lock()
	delete(s.active, id)
	s.mu.Unlock()
}

// writeFileAtomic writes path so that it either does not exist or holds
// data in full, also across a crash.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: writing %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: fsync %s: %w", dir, err)
	}
	return nil
}

// Checkpoint is an opened complete checkpoint: its manifest, with every
// part present at its recorded size. Parts are read (and checksummed) on
// demand.
type Checkpoint struct {
	ID       uint64
	Path     string
	Manifest *Manifest

	fs   Storage // the storage holding it and its chains
	name string  // its directory in fs
}

// Open opens complete checkpoint id. It fails with a *FileError naming the
// file when the checkpoint is missing or incomplete, the manifest is
// corrupt or of an unknown version, or a part is missing or has the wrong
// size.
func (s *Store) Open(id uint64) (*Checkpoint, error) {
	dir := s.Path(id)
	name := chkName(id)
	mpath := s.fs.Path(joinName(name, ManifestName))
	data, err := s.fs.ReadFile(joinName(name, ManifestName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, derr := s.fs.List(name + "/"); derr == nil {
				return nil, fileErr(dir, ErrIncomplete, "checkpoint %d is incomplete (no %s)", id, ManifestName)
			}
			return nil, fileErr(dir, ErrMissing, "checkpoint %d does not exist", id)
		}
		return nil, &FileError{Path: mpath, Err: err}
	}
	m, err := decodeManifest(mpath, id, data)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{ID: id, Path: dir, Manifest: m, fs: s.fs, name: name}
	if err := c.statAll(); err != nil {
		return nil, err
	}
	return c, nil
}

// statAll checks that every file the checkpoint needs is there at its
// recorded size.
func (c *Checkpoint) statAll() error {
	for _, p := range c.Manifest.Files() {
		if _, err := c.stat(p); err != nil {
			return err
		}
	}
	return nil
}

// nameOf is the storage name of a part file of the checkpoint or of a
// chain: an earlier checkpoint's directory beside this one's.
func (c *Checkpoint) nameOf(p PartInfo) string {
	if p.Checkpoint == 0 || p.Checkpoint == c.ID {
		return joinName(c.name, p.File)
	}
	parent, _ := path.Split(c.name)
	return joinName(parent, chkName(p.Checkpoint), p.File)
}

// pathOf is the path (or URL) of a part file, for messages.
func (c *Checkpoint) pathOf(p PartInfo) string { return c.fs.Path(c.nameOf(p)) }

func (c *Checkpoint) stat(p PartInfo) (string, error) {
	path := c.pathOf(p)
	size, err := c.fs.Stat(c.nameOf(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return path, fileErr(path, ErrMissing, "part listed in %s does not exist", ManifestName)
		}
		if errors.Is(err, errNotRegular) {
			return path, fileErr(path, ErrCorrupt, "not a regular file")
		}
		return path, &FileError{Path: path, Err: err}
	}
	if size != p.Bytes {
		return path, sizeErr(path, size, p.Bytes)
	}
	return path, nil
}

func sizeErr(path string, got, want int64) error {
	what := "truncated"
	if got > want {
		what = "longer than written"
	}
	return fileErr(path, ErrCorrupt, "%s: %d bytes, %s says %d", what, got, ManifestName, want)
}

// Parts lists the checkpoint's parts, ordered by operator and subtask.
func (c *Checkpoint) Parts() []PartInfo { return c.Manifest.Parts }

// PartsOf lists the parts of one operator (all its subtasks: a restore at
// another parallelism reads them all and keeps its key groups).
func (c *Checkpoint) PartsOf(operator string) []PartInfo {
	var out []PartInfo
	for _, p := range c.Manifest.Parts {
		if p.Operator == operator {
			out = append(out, p)
		}
	}
	return out
}

// ReadPart reads one part: size and SHA-256 against the manifest, then the
// Arrow file and its identity against the manifest. A delta is read with
// its chain and merged: the result reads as a full part.
func (c *Checkpoint) ReadPart(operator string, subtask int) (*Part, error) {
	name := partFileName(operator, subtask)
	for _, p := range c.Manifest.Parts {
		if p.File != name {
			continue
		}
		if !p.Delta {
			return c.read(p)
		}
		var parts []*Part
		for _, info := range append(slices.Clone(p.Chain), p) {
			part, err := c.read(info)
			if err != nil {
				for _, q := range parts {
					q.Release()
				}
				return nil, err
			}
			parts = append(parts, part)
		}
		return mergeChain(parts)
	}
	return nil, fileErr(c.fs.Path(joinName(c.name, name)), ErrMissing, "checkpoint %d has no part for %s subtask %d", c.ID, operator, subtask)
}

func (c *Checkpoint) read(p PartInfo) (*Part, error) {
	path := c.pathOf(p)
	data, err := c.fs.ReadFile(c.nameOf(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fileErr(path, ErrMissing, "part listed in %s does not exist", ManifestName)
		}
		return nil, &FileError{Path: path, Err: err}
	}
	if int64(len(data)) != p.Bytes {
		return nil, sizeErr(path, int64(len(data)), p.Bytes)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != p.SHA256 {
		return nil, fileErr(path, ErrCorrupt, "SHA-256 mismatch: file has %s, %s says %s", got, ManifestName, p.SHA256)
	}
	part, err := DecodePart(path, data)
	if err != nil {
		return nil, err
	}
	var bad string
	switch {
	case part.Operator != p.Operator || part.Subtask != p.Subtask:
		bad = fmt.Sprintf("file is %s subtask %d, %s says %s subtask %d", part.Operator, part.Subtask, ManifestName, p.Operator, p.Subtask)
	case part.CheckpointID != p.dir(c.ID):
		bad = fmt.Sprintf("file belongs to checkpoint %d, not %d", part.CheckpointID, p.dir(c.ID))
	case part.Delta != p.Delta:
		bad = fmt.Sprintf("file is a delta: %t, %s says %t", part.Delta, ManifestName, p.Delta)
	case part.MaxParallelism != c.Manifest.MaxParallelism:
		bad = fmt.Sprintf("file has max_parallelism %d, %s says %d", part.MaxParallelism, ManifestName, c.Manifest.MaxParallelism)
	case part.NumRows() != p.Rows:
		bad = fmt.Sprintf("file has %d rows, %s says %d", part.NumRows(), ManifestName, p.Rows)
	}
	if bad != "" {
		part.Release()
		return nil, fileErr(path, ErrCorrupt, "%s", bad)
	}
	return part, nil
}

// Verify reads every part and chain part, checking checksums and
// contents.
func (c *Checkpoint) Verify() error {
	for _, p := range c.Manifest.Files() {
		part, err := c.read(p)
		if err != nil {
			return err
		}
		part.Release()
	}
	return nil
}
