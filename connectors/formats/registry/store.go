package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// DataFile is the name of the dev registry's one file inside
// Options.DataDir.
const DataFile = "schema-registry.json"

// state is everything the dev registry knows; the server guards it with
// its mutex. Its JSON form is the data file.
type state struct {
	NextID   int                 `json:"next_id"`
	Global   Level               `json:"compatibility"`
	Schemas  map[int]*stored     `json:"schemas"`
	Subjects map[string]*subject `json:"subjects"`
	// Configs holds subject-level compatibility; a subject's config may
	// exist before and after the subject.
	Configs map[string]Level `json:"configs,omitempty"`

	byKey map[string]int // canonical(schema) → id; rebuilt on load
}

// stored is one schema under one id.
type stored struct {
	Type SchemaType `json:"schemaType"`
	Text string     `json:"schema"`
	key  string
}

type subject struct {
	NextVersion int              `json:"next_version"`
	Versions    []*storedVersion `json:"versions"` // ascending by Version
}

type storedVersion struct {
	Version int  `json:"version"`
	ID      int  `json:"id"`
	Deleted bool `json:"deleted,omitempty"`
}

func newState() *state {
	return &state{
		NextID:   1,
		Global:   DefaultLevel,
		Schemas:  map[int]*stored{},
		Subjects: map[string]*subject{},
		Configs:  map[string]Level{},
		byKey:    map[string]int{},
	}
}

// live returns the subject's versions, with soft-deleted ones only when
// deleted is set.
func (s *subject) live(deleted bool) []*storedVersion {
	var vs []*storedVersion
	for _, v := range s.Versions {
		if deleted || !v.Deleted {
			vs = append(vs, v)
		}
	}
	return vs
}

// level is the compatibility level that governs subj.
func (st *state) level(subj string) Level {
	if l, ok := st.Configs[subj]; ok {
		return l
	}
	return st.Global
}

// dropUnused forgets schemas no subject version (soft-deleted or not)
// uses any more, as a permanent delete does in Confluent's registry. Ids
// are never reused: NextID only grows.
func (st *state) dropUnused() {
	used := map[int]bool{}
	for _, s := range st.Subjects {
		for _, v := range s.Versions {
			used[v.ID] = true
		}
	}
	for id, sc := range st.Schemas {
		if !used[id] {
			delete(st.byKey, sc.key)
			delete(st.Schemas, id)
		}
	}
}

func (st *state) subjectNames(deleted bool) []string {
	names := []string{}
	for name, s := range st.Subjects {
		if len(s.live(deleted)) > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func load(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return newState(), nil
	}
	if err != nil {
		return nil, err
	}
	st, err := loadBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// loadBytes decodes and checks a data file; empty b is a new registry.
func loadBytes(b []byte) (*state, error) {
	st := newState()
	if len(b) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, err
	}
	if st.Schemas == nil {
		st.Schemas = map[int]*stored{}
	}
	if st.Subjects == nil {
		st.Subjects = map[string]*subject{}
	}
	if st.Configs == nil {
		st.Configs = map[string]Level{}
	}
	if _, err := ParseLevel(string(st.Global)); err != nil {
		return nil, err
	}
	for id, sc := range st.Schemas {
		if sc == nil {
			return nil, fmt.Errorf("schema %d is null", id)
		}
		k, err := canonical(sc.Type, sc.Text)
		if err != nil {
			return nil, fmt.Errorf("schema %d: %w", id, err)
		}
		sc.key = k
		st.byKey[k] = id
		if id >= st.NextID {
			st.NextID = id + 1
		}
	}
	for name, s := range st.Subjects {
		if s == nil {
			return nil, fmt.Errorf("subject %q is null", name)
		}
		slices.SortFunc(s.Versions, func(a, b *storedVersion) int { return a.Version - b.Version })
		for _, v := range s.Versions {
			if st.Schemas[v.ID] == nil {
				return nil, fmt.Errorf("subject %q version %d names schema %d, which the file lacks", name, v.Version, v.ID)
			}
			if v.Version >= s.NextVersion {
				s.NextVersion = v.Version + 1
			}
		}
	}
	return st, nil
}

// writeAtomic replaces path with b: a temporary file in the same
// directory, fsynced, renamed over path, then the directory fsynced, so a
// crash leaves the old file or the new one, never a torn one.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op once renamed
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }
