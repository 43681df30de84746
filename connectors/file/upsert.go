package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clink-dev/clink/connectors"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// UpsertSink applies a changelog by primary key and, at each flush, writes
// the resulting table to its part file (rows in the order their keys first
// appeared), replacing the file atomically: readers see either the previous
// table or the new one. +I and +U set a key's row, -D removes it, -U is
// ignored (the +U that follows replaces the row), as in Flink's upsert sinks.
type UpsertSink struct {
	name    string
	keys    []int
	rows    map[string]int // key -> index in order
	order   []upsertRow
	buf     []byte
	dirty   bool
	flushed bool // the table was written once in this run
}

type upsertRow struct {
	key  string
	json string // "" = deleted
}

var _ engine.Sink = (*UpsertSink)(nil)

func newUpsertSink(t *connectors.Table, name string) (*UpsertSink, error) {
	s := &UpsertSink{name: name, rows: map[string]int{}}
	for _, k := range strings.Split(t.Options["primary_key"], ",") {
		k = strings.TrimSpace(k)
		idx := -1
		for i, f := range t.Schema.Fields() {
			if strings.EqualFold(f.Name, k) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("file sink '%s': primary_key column '%s' is not a column", t.Name, k)
		}
		s.keys = append(s.keys, idx)
	}
	return s, nil
}

// Write applies the batch's rows.
func (s *UpsertSink) Write(b *vector.Batch) error {
	defer b.Release()
	var key []byte
	b.Rows(func(i int) {
		kind := vector.Insert
		if b.Kinds != nil {
			kind = b.Kinds[i]
		}
		if kind == vector.UpdateBefore {
			return
		}
		key = key[:0]
		for _, c := range s.keys {
			col := b.Column(c)
			if col.IsNull(i) {
				key = append(key, 0)
			} else {
				key = append(append(key, 1), col.ValueStr(i)...)
			}
			key = append(key, 0)
		}
		s.buf = cjson.AppendRow(s.buf[:0], b, i)
		row := string(s.buf)
		if kind == vector.Delete {
			row = ""
		}
		if at, ok := s.rows[string(key)]; ok {
			s.order[at].json = row
		} else if row != "" {
			s.rows[string(key)] = len(s.order)
			s.order = append(s.order, upsertRow{key: string(key), json: row})
		}
		s.dirty = true
	})
	return nil
}

// Flush writes the current table and renames it over the part file.
func (s *UpsertSink) Flush() error {
	if !s.dirty && s.flushed {
		return nil
	}
	// (The first flush always writes: a run's table replaces what an
	// earlier run left, also when it is empty.)
	// Hidden while written: readers of the directory skip dot files.
	tmp := filepath.Join(filepath.Dir(s.name), "."+filepath.Base(s.name)+".inprogress")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	var out []byte
	for _, r := range s.order {
		if r.json != "" {
			out = append(out, r.json...)
		}
	}
	if _, err := f.Write(out); err != nil {
		f.Close()
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.dirty, s.flushed = false, true
	return os.Rename(tmp, s.name)
}

// Close does nothing more: Flush has written the table.
func (s *UpsertSink) Close() error { return nil }
