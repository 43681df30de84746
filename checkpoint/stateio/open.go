package stateio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/clink-dev/clink/checkpoint"
)

// Open opens a complete checkpoint named on a command line. path is either
// one checkpoint directory, chk-<id>, or a checkpoint directory root
// holding chk-<id> directories; in a root, id selects the checkpoint and 0
// means the newest complete one. Every failure is a *checkpoint.FileError
// naming the file or directory.
func Open(path string, id uint64) (*checkpoint.Checkpoint, error) {
	if checkpoint.IsURL(path) {
		return openURL(path, id)
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &checkpoint.FileError{Path: path, Kind: checkpoint.ErrMissing, Err: errors.New("no such checkpoint or checkpoint directory")}
		}
		return nil, &checkpoint.FileError{Path: path, Err: err}
	}
	if !st.IsDir() {
		return nil, &checkpoint.FileError{Path: path, Kind: checkpoint.ErrMissing, Err: errors.New("not a directory (give a checkpoint directory or one chk-<id> in it)")}
	}
	if own, ok := dirID(filepath.Base(filepath.Clean(path))); ok {
		if id != 0 && id != own {
			return nil, fmt.Errorf("%s is checkpoint %d, not %d", path, own, id)
		}
		store, err := checkpoint.NewStore(filepath.Dir(filepath.Clean(path)), checkpoint.Options{})
		if err != nil {
			return nil, err
		}
		return store.Open(own)
	}
	store, err := checkpoint.NewStore(path, checkpoint.Options{})
	if err != nil {
		return nil, err
	}
	return openIn(store, path, id)
}

// openURL is Open of a store in an object store (s3://bucket/prefix),
// which has no directories to stat: a last segment chk-<id> names one
// checkpoint, anything else a store.
func openURL(url string, id uint64) (*checkpoint.Checkpoint, error) {
	trimmed := strings.TrimRight(url, "/")
	if i := strings.LastIndexByte(trimmed, '/'); i > 0 && trimmed[i-1] != '/' {
		if own, ok := dirID(trimmed[i+1:]); ok {
			if id != 0 && id != own {
				return nil, fmt.Errorf("%s is checkpoint %d, not %d", url, own, id)
			}
			store, err := checkpoint.NewStore(trimmed[:i], checkpoint.Options{})
			if err != nil {
				return nil, err
			}
			return store.Open(own)
		}
	}
	store, err := checkpoint.NewStore(url, checkpoint.Options{})
	if err != nil {
		return nil, err
	}
	return openIn(store, url, id)
}

// openIn opens checkpoint id of store (0: the newest complete one).
func openIn(store *checkpoint.Store, path string, id uint64) (*checkpoint.Checkpoint, error) {
	if id != 0 {
		return store.Open(id)
	}
	list, err := store.List()
	if err != nil {
		return nil, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Complete {
			return store.Open(list[i].ID)
		}
	}
	// A savepoint directory (savepoint-<job>-<id>) holds one checkpoint's
	// manifest and parts itself.
	if cp, err := checkpoint.OpenDir(path); err == nil {
		return cp, nil
	}
	msg := "no checkpoint (no chk-<id> directory)"
	if len(list) > 0 {
		msg = fmt.Sprintf("no complete checkpoint (%d incomplete, without %s)", len(list), checkpoint.ManifestName)
	}
	return nil, &checkpoint.FileError{Path: path, Kind: checkpoint.ErrMissing, Err: errors.New(msg)}
}

// dirID is the id of a chk-<id> directory name in canonical decimal, as
// the store names them.
func dirID(name string) (uint64, bool) {
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

// Selection narrows what a tool reads: one operator, one slot, or both.
// The zero value selects everything.
type Selection struct {
	Operator string
	Slot     string
}

// Parts lists the parts the selection reads, in manifest order. An
// operator that the checkpoint does not have is an error listing those it
// has.
func (s Selection) Parts(c *checkpoint.Checkpoint) ([]checkpoint.PartInfo, error) {
	if s.Operator == "" {
		return c.Parts(), nil
	}
	parts := c.PartsOf(s.Operator)
	if len(parts) == 0 {
		return nil, fmt.Errorf("checkpoint %d has no operator %q (operators: %s)", c.ID, s.Operator, strings.Join(Operators(c), ", "))
	}
	return parts, nil
}

// Operators lists the operators that wrote parts, sorted.
func Operators(c *checkpoint.Checkpoint) []string {
	var ops []string
	for _, p := range c.Parts() {
		if len(ops) == 0 || ops[len(ops)-1] != p.Operator {
			ops = append(ops, p.Operator)
		}
	}
	return ops
}

// Each reads the selected parts one at a time, in manifest order, and
// calls fn with each; the part is released when fn returns. With a slot
// selected, a part that does not declare the slot is skipped, and a slot
// that no selected part declares is an error listing the slots there are.
func Each(c *checkpoint.Checkpoint, sel Selection, fn func(*checkpoint.Part) error) error {
	return each(c, sel, true, fn)
}

// each is Each; without requireSlot a missing slot is no error.
func each(c *checkpoint.Checkpoint, sel Selection, requireSlot bool, fn func(*checkpoint.Part) error) error {
	infos, err := sel.Parts(c)
	if err != nil {
		return err
	}
	found := sel.Slot == ""
	var slots []string
	for _, info := range infos {
		part, err := c.ReadPart(info.Operator, info.Subtask)
		if err != nil {
			return err
		}
		if sel.Slot != "" && !declares(part, sel.Slot) {
			for _, s := range part.Slots {
				if !slices.Contains(slots, s.Name) {
					slots = append(slots, s.Name)
				}
			}
			part.Release()
			continue
		}
		found = true
		err = fn(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	if !found && requireSlot {
		slices.Sort(slots)
		return fmt.Errorf("checkpoint %d has no slot %q in the parts read (slots: %s)", c.ID, sel.Slot, strings.Join(slots, ", "))
	}
	return nil
}

func declares(p *checkpoint.Part, slot string) bool {
	for _, s := range p.Slots {
		if s.Name == slot {
			return true
		}
	}
	return false
}

// slotOf returns the declaration of slot name in p.
func slotOf(p *checkpoint.Part, name string) (checkpoint.Slot, bool) {
	for _, s := range p.Slots {
		if s.Name == name {
			return s, true
		}
	}
	return checkpoint.Slot{}, false
}
