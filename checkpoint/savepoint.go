package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A savepoint is a complete checkpoint copied out of its store into a
// directory of its own (Flink's savepoint-<id>), so that the store's
// Retain, which only ever looks at the chk-<id> entries of the store's
// directory, never removes it. It holds its manifest and every part it
// names, nothing else: it refers to no file of the store.

// OpenDir opens the complete checkpoint in dir: a store's chk-<id>
// directory or a savepoint directory. Its id is the manifest's (for a
// chk-<id> directory it must be that id).
func OpenDir(dir string) (*Checkpoint, error) {
	parent, base := splitLoc(dir)
	st, err := openStorage(parent, false)
	if err != nil {
		return nil, err
	}
	mname := joinName(base, ManifestName)
	mpath := st.Path(mname)
	data, err := st.ReadFile(mname)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, derr := st.List(base + "/"); derr == nil {
				return nil, fileErr(dir, ErrIncomplete, "%s is not a complete checkpoint or savepoint (no %s)", dir, ManifestName)
			}
			return nil, fileErr(dir, ErrMissing, "no checkpoint or savepoint directory %s", dir)
		}
		return nil, &FileError{Path: mpath, Err: err}
	}
	var head struct {
		ID uint64 `json:"checkpoint_id"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fileErr(mpath, ErrCorrupt, "invalid JSON (%d bytes; truncated?): %v", len(data), err)
	}
	id := head.ID
	if n, ok := parseDirName(base); ok {
		id = n
	}
	m, err := decodeManifest(mpath, id, data)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{ID: id, Path: dir, Manifest: m, fs: st, name: base}
	if err := c.statAll(); err != nil {
		return nil, err
	}
	return c, nil
}

// WriteSavepoint writes complete checkpoint cp as the savepoint dir, which
// must not exist. The parts are hard-linked where the file system allows
// (a part is never written again once its checkpoint is complete, and
// removing the store's name leaves the savepoint's), else copied, and
// fsynced; the directory is built under a hidden temporary name beside
// dir and renamed to dir last, so dir is either a complete savepoint or
// absent, also across a crash.
//
// In an object store (dir a URL) there is no rename: the parts are
// uploaded first and the manifest last, as for a checkpoint, so dir is
// a savepoint once its manifest exists (an interrupted one is
// incomplete: OpenDir refuses it; remove its prefix).
func WriteSavepoint(cp *Checkpoint, dir string) error {
	if IsURL(dir) {
		return writeRemoteSavepoint(cp, dir)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("savepoint: %s already exists", dir)
	}
	if cp.Manifest.Incremental() {
		return writeMergedSavepoint(cp, dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(parent, "."+filepath.Base(dir)+".inprogress-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	err := func() error {
		for _, p := range cp.Manifest.Parts {
			if err := cp.copyOut(p, filepath.Join(tmp, p.File)); err != nil {
				return err
			}
		}
		if err := syncDir(tmp); err != nil {
			return err
		}
		data, err := cp.fs.ReadFile(joinName(cp.name, ManifestName))
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(tmp, ManifestName), data); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		return syncDir(parent)
	}()
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// copyOut makes dst a durable local file with part p's content: a hard
// link or copy of a local part, a download of a remote one.
func (c *Checkpoint) copyOut(p PartInfo, dst string) error {
	if l, ok := c.fs.(LocalStorage); ok {
		return linkOrCopy(l.file(c.nameOf(p)), dst)
	}
	data, err := c.fs.ReadFile(c.nameOf(p))
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("savepoint: writing %s: %w", dst, err)
	}
	return nil
}

// linkOrCopy makes dst a durable file with src's content.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("savepoint: copying %s: %w", src, err)
	}
	return nil
}

// writeMergedSavepoint writes an incremental checkpoint as a savepoint of
// full parts: each delta read with its chain, merged and written again, so
// that the savepoint needs no file of the store.
func writeMergedSavepoint(cp *Checkpoint, dir string) error {
	parent := filepath.Dir(dir)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(parent, "."+filepath.Base(dir)+".inprogress-"+hex.EncodeToString(rnd[:]))
	err := func() error {
		st, err := NewStore(tmp, Options{MaxParallelism: cp.Manifest.MaxParallelism})
		if err != nil {
			return err
		}
		w, err := st.Begin(cp.ID)
		if err != nil {
			return err
		}
		for _, info := range cp.Manifest.Parts {
			if err := copyPart(cp, w, info); err != nil {
				w.Abort()
				return err
			}
		}
		m := cp.Manifest
		if err := w.Commit(Meta{Job: m.Job, Fingerprint: m.Fingerprint, Properties: m.Properties, Operators: m.Operators}); err != nil {
			return err
		}
		if err := os.Rename(st.Path(cp.ID), dir); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		return syncDir(parent)
	}()
	os.RemoveAll(tmp)
	return err
}

// copyPart writes the (merged) state of one part of cp into w as a full
// part.
func copyPart(cp *Checkpoint, w *Writer, info PartInfo) error {
	part, err := cp.ReadPart(info.Operator, info.Subtask)
	if err != nil {
		return err
	}
	defer part.Release()
	p, err := w.Part(info.Operator, info.Subtask, part.Slots)
	if err != nil {
		return err
	}
	for _, rec := range part.Records {
		if err := p.Write(rec); err != nil {
			p.Close()
			return err
		}
	}
	return p.Close()
}

// writeRemoteSavepoint copies cp to the object store prefix dir: parts,
// then the manifest. An incremental checkpoint is merged into a local
// temporary savepoint first.
func writeRemoteSavepoint(cp *Checkpoint, dir string) error {
	parent, base := splitLoc(dir)
	if base == "" {
		return fmt.Errorf("savepoint: %s is a bucket's root; name a prefix", dir)
	}
	st, err := openStorage(parent, true)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if _, err := st.List(base + "/"); err == nil {
		return fmt.Errorf("savepoint: %s already exists", dir)
	}
	if cp.Manifest.Incremental() {
		tmp, err := os.MkdirTemp("", "clink-savepoint-")
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		defer os.RemoveAll(tmp)
		local := filepath.Join(tmp, "sp")
		if err := writeMergedSavepoint(cp, local); err != nil {
			return err
		}
		if cp, err = OpenDir(local); err != nil {
			return err
		}
	}
	for _, p := range cp.Manifest.Parts {
		data, err := cp.fs.ReadFile(cp.nameOf(p))
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		if err := st.WriteFile(joinName(base, p.File), data); err != nil {
			return fmt.Errorf("savepoint: %s: %w", st.Path(joinName(base, p.File)), err)
		}
	}
	data, err := cp.fs.ReadFile(joinName(cp.name, ManifestName))
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := st.WriteFile(joinName(base, ManifestName), data); err != nil {
		return fmt.Errorf("savepoint: %s: %w", st.Path(joinName(base, ManifestName)), err)
	}
	return nil
}
