package iceberg

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	ib "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Snapshot summary properties of the sink's commits.
const (
	PropSink         = "clink.sink"
	PropSubtask      = "clink.subtask"
	PropCheckpointID = "clink.checkpoint-id"
	PropFiles        = "clink.files"
)

// Commit retries: conflicting commits (another subtask or job committed
// first) are redone on the refreshed table, other failures a few times.
const (
	maxConflictRetries = 100
	maxErrorRetries    = 4
	minRetryWait       = 20 * time.Millisecond
	maxRetryWait       = 2 * time.Second
)

// encodeFiles describes a commit's files for its summary:
// <gen>:<first>-<last>[,<gen>:<first>-<last>...], the sequence numbers of
// each generation in runs.
func encodeFiles(files []dataFile) string {
	type key struct{ gen, seq int64 }
	ks := make([]key, len(files))
	for i, f := range files {
		ks[i] = key{f.gen, f.seq}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].gen != ks[j].gen {
			return ks[i].gen < ks[j].gen
		}
		return ks[i].seq < ks[j].seq
	})
	var b strings.Builder
	for i := 0; i < len(ks); {
		j := i
		for j+1 < len(ks) && ks[j+1].gen == ks[i].gen && ks[j+1].seq == ks[j].seq+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d-%d", ks[i].gen, ks[i].seq, ks[j].seq)
		i = j + 1
	}
	return b.String()
}

// fileRange is one run of sequence numbers in a commit's clink.files.
type fileRange struct{ gen, first, last int64 }

func decodeFiles(s string) []fileRange {
	var out []fileRange
	for _, part := range strings.Split(s, ",") {
		g, r, ok1 := strings.Cut(part, ":")
		a, z, ok2 := strings.Cut(r, "-")
		gen, err1 := strconv.ParseInt(g, 10, 64)
		first, err2 := strconv.ParseInt(a, 10, 64)
		last, err3 := strconv.ParseInt(z, 10, 64)
		if ok1 && ok2 && err1 == nil && err2 == nil && err3 == nil {
			out = append(out, fileRange{gen, first, last})
		}
	}
	return out
}

// summaryProps are the properties of the snapshot that commits files of
// subtask for checkpoint ckpt (0: without checkpoints).
func (w *writer) summaryProps(subtask int, ckpt uint64, files []dataFile) ib.Properties {
	p := ib.Properties{PropSink: w.cfg.sinkID, PropSubtask: strconv.Itoa(subtask), PropFiles: encodeFiles(files)}
	if ckpt != 0 {
		p[PropCheckpointID] = strconv.FormatUint(ckpt, 10)
	}
	return p
}

// committed reports whether tbl has a snapshot with every one of props.
func committed(tbl *table.Table, props ib.Properties) bool {
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		match := true
		for k, v := range props {
			if s.Summary.Properties[k] != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// commitFiles adds files (of one subtask and checkpoint) to the table in
// one append snapshot, unless a snapshot with the same summary exists: a
// commit that landed before a crash, or whose reply was lost, is not
// repeated. A conflict with a concurrent commit is redone on the
// refreshed table.
func (w *writer) commitFiles(subtask int, ckpt uint64, files []dataFile) error {
	props := w.summaryProps(subtask, ckpt, files)
	paths := make([]string, len(files))
	var rows int64
	for i, f := range files {
		paths[i] = f.path
		rows += f.rows
	}
	what := fmt.Sprintf("committing %d files (%d rows) of subtask %d", len(files), rows, subtask)
	if ckpt != 0 {
		what += fmt.Sprintf(" for checkpoint %d", ckpt)
	}
	conflicts, failures := 0, 0
	for wait := minRetryWait; ; wait = min(2*wait, maxRetryWait) {
		err := w.commitOnce(paths, props)
		if err == nil {
			w.filesCommitted.Add(int64(len(files)))
			return nil
		}
		if conflict(err) {
			conflicts++
		} else {
			failures++
		}
		if conflicts > maxConflictRetries || failures > maxErrorRetries {
			return w.errorf("%s: %w", what, err)
		}
		time.Sleep(wait/2 + rand.N(wait/2+1))
	}
}

// conflict reports whether err says another commit came first: nothing
// was committed, and redoing the commit on the refreshed table may work.
func conflict(err error) bool {
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := err.Error()
	// The catalog's check of the commit's requirements (the branch moved),
	// and SQLite's lock, are not wrapped as ErrCommitFailed.
	return strings.Contains(msg, "requirement failed") || strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY")
}

// commitOnce loads the table, and commits unless the commit is there.
func (w *writer) commitOnce(paths []string, props ib.Properties) error {
	tbl, err := w.cat.LoadTable(w.ctx, w.cfg.ident())
	if err != nil {
		return err
	}
	if committed(tbl, props) {
		return nil
	}
	txn := tbl.NewTransaction()
	// The files are new (their names are this sink's, and the summary
	// check above found no commit of them): no scan for duplicates.
	if err := txn.AddFiles(w.ctx, paths, props, true); err != nil {
		return err
	}
	if _, err := txn.Commit(w.ctx); err != nil {
		return err
	}
	w.snapshotsCommitted.Add(1)
	return nil
}

// listedFile is one of the sink's data files found in the data directory.
type listedFile struct {
	name     string
	subtask  int
	gen, seq int64
}

// parseName reads a data file name of this sink:
// <tag>-<subtask>-<gen>-<seq>.parquet.
func (w *writer) parseName(name string) (listedFile, bool) {
	rest, ok := strings.CutPrefix(name, w.cfg.fileTag+"-")
	if !ok {
		return listedFile{}, false
	}
	rest, ok = strings.CutSuffix(rest, ".parquet")
	parts := strings.Split(rest, "-")
	if !ok || len(parts) != 3 {
		return listedFile{}, false
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return listedFile{}, false
		}
		n[i] = v
	}
	return listedFile{name: name, subtask: int(n[0]), gen: n[1], seq: n[2]}, true
}

// list returns the sink's data files in the data directory (not its
// subdirectories).
func (w *writer) list() ([]listedFile, error) {
	var out []listedFile
	lister := w.fio.(iceio.ListableIO)
	root := w.dataDir
	err := lister.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if trimSlash(p) != root && !sameDir(p, root) {
				return fs.SkipDir
			}
			return nil
		}
		if f, ok := w.parseName(path.Base(p)); ok {
			out = append(out, f)
		}
		return nil
	})
	return out, err
}

// sameDir: a local walk reports OS paths for a file:// root.
func sameDir(p, root string) bool {
	if u, err := url.Parse(root); err == nil && u.Scheme == "file" {
		root = filepath.FromSlash(u.Path)
	}
	return filepath.Clean(root) == filepath.Clean(p)
}

// covers reports whether subtask k of a run with state r (in a checkpoint)
// accounts for file f: older generation, or this one below next.
func (r runState) covers(f listedFile) bool {
	return f.gen < r.gen || (f.gen == r.gen && f.seq < r.next)
}

// cleanup deletes the sink's data files of this subtask and of the
// subtasks k >= parallelism with k mod parallelism = this one that
// nothing accounts for: not pending (listed by the restored checkpoint),
// not covered by a run state of the checkpoint, not committed by a
// snapshot of this sink, and not referenced by any snapshot of the table.
// It returns the highest generation of this subtask's files (deleted ones
// too), so that a new run picks a higher one.
func (w *writer) cleanup(pending map[string]bool, runs map[int]runState) (int64, error) {
	files, err := w.list()
	if err != nil {
		return 0, w.errorf("listing %s: %w", w.dataDir, err)
	}
	par := w.parallelism
	var maxGen int64
	var cands []listedFile
	for _, f := range files {
		if f.subtask != w.subtask && !(f.subtask >= par && f.subtask%par == w.subtask) {
			continue
		}
		if f.subtask == w.subtask {
			maxGen = max(maxGen, f.gen)
		}
		if pending[f.name] {
			continue
		}
		if r, ok := runs[f.subtask]; ok && r.covers(f) {
			continue
		}
		cands = append(cands, f)
	}
	if len(cands) == 0 {
		return maxGen, nil
	}
	tbl, err := w.cat.LoadTable(w.ctx, w.cfg.ident())
	if err != nil {
		return 0, w.errorf("%w", err)
	}
	// Files a snapshot of this sink committed (a restore from an older
	// checkpoint than the newest committed one, or a start without one).
	done := map[int][]fileRange{}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil || s.Summary.Properties[PropSink] != w.cfg.sinkID {
			continue
		}
		k, err := strconv.Atoi(s.Summary.Properties[PropSubtask])
		if err != nil {
			continue
		}
		done[k] = append(done[k], decodeFiles(s.Summary.Properties[PropFiles])...)
	}
	var orphans []listedFile
	for _, f := range cands {
		in := false
		for _, r := range done[f.subtask] {
			if r.gen == f.gen && f.seq >= r.first && f.seq <= r.last {
				in = true
				break
			}
		}
		if !in {
			orphans = append(orphans, f)
		}
	}
	if len(orphans) == 0 {
		return maxGen, nil
	}
	// The snapshots that committed a file may have expired while later
	// ones still hold it: only a file no snapshot references is deleted.
	refs, err := referenced(w, tbl)
	if err != nil {
		return 0, w.errorf("reading the table's manifests: %w", err)
	}
	for _, f := range orphans {
		if refs[f.name] {
			continue
		}
		if err := w.fio.Remove(w.dataDir + "/" + f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, w.errorf("deleting %s: %w", f.name, err)
		}
	}
	return maxGen, nil
}

// referenced returns the base names of the data files any snapshot of tbl
// references.
func referenced(w *writer, tbl *table.Table) (map[string]bool, error) {
	fsys, err := tbl.FS(w.ctx)
	if err != nil {
		return nil, err
	}
	refs := map[string]bool{}
	seen := map[string]bool{}
	for mf, err := range tbl.AllManifests(w.ctx) {
		if err != nil {
			return nil, err
		}
		if seen[mf.FilePath()] || mf.ManifestContent() != ib.ManifestContentData {
			continue
		}
		seen[mf.FilePath()] = true
		for e, err := range mf.Entries(fsys, false) {
			if err != nil {
				return nil, err
			}
			refs[path.Base(e.DataFile().FilePath())] = true
		}
	}
	return refs, nil
}
