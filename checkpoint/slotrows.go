package checkpoint

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SlotRows are n rows of one keyed slot, given column-wise: the fast path
// for operators whose state is columnar (one record per call, no per-row
// builder calls).
type SlotRows struct {
	Slot      string
	KeyGroups []int32  // len n
	Keys      []string // len n; nil for <raw> rows (null keys)
	// KeyArray holds the keys instead of Keys (the caller keeps it).
	KeyArray *array.String
	// Starts and Ends are the windows; nil when the rows have none.
	Starts, Ends []int64
	// Values maps the slot's value column names to arrays of length n;
	// a declared column left out is null.
	Values map[string]arrow.Array
}

// WriteSlot writes rows as one record of the part's schema: the fixed
// columns from rows, the slot's value columns from rows.Values and every
// other value column null. The arrays in rows.Values stay the caller's.
func (p *PartWriter) WriteSlot(rows SlotRows) error {
	n := len(rows.KeyGroups)
	if (rows.Keys != nil && len(rows.Keys) != n) || (rows.Starts != nil && (len(rows.Starts) != n || len(rows.Ends) != n)) {
		return p.fail(fmt.Errorf("checkpoint: %s: slot %q: fixed columns of different lengths", p.path, rows.Slot))
	}
	if n == 0 {
		return nil
	}
	mem := p.w.store.opts.Allocator
	cols := make([]arrow.Array, 0, p.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	cols = append(cols, repeated(mem, rows.Slot, n))
	kb := array.NewInt32Builder(mem)
	defer kb.Release()
	kb.AppendValues(rows.KeyGroups, nil)
	cols = append(cols, kb.NewArray())
	switch {
	case rows.KeyArray != nil:
		if rows.KeyArray.Len() != n {
			return p.fail(fmt.Errorf("checkpoint: %s: slot %q: %d keys for %d rows", p.path, rows.Slot, rows.KeyArray.Len(), n))
		}
		rows.KeyArray.Retain()
		cols = append(cols, rows.KeyArray)
	case rows.Keys == nil:
		sb.AppendNulls(n)
		cols = append(cols, sb.NewArray())
	default:
		sb.AppendValues(rows.Keys, nil)
		cols = append(cols, sb.NewArray())
	}
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	for _, w := range [][]int64{rows.Starts, rows.Ends} {
		if w == nil {
			ib.AppendNulls(n)
		} else {
			ib.AppendValues(w, nil)
		}
		cols = append(cols, ib.NewArray())
	}
	used := 0
	for _, f := range p.schema.Fields()[numFixed:] {
		if a, ok := rows.Values[f.Name]; ok {
			if a.Len() != n {
				return p.fail(fmt.Errorf("checkpoint: %s: slot %q: column %q has %d values for %d rows", p.path, rows.Slot, f.Name, a.Len(), n))
			}
			a.Retain()
			cols = append(cols, a)
			used++
			continue
		}
		cols = append(cols, array.MakeArrayOfNull(mem, f.Type, n))
	}
	if used != len(rows.Values) {
		return p.fail(fmt.Errorf("checkpoint: %s: slot %q: value columns given that the part does not have", p.path, rows.Slot))
	}
	rec := array.NewRecordBatch(p.schema, cols, int64(n))
	defer rec.Release()
	return p.Write(rec)
}

// Column returns the named value column of rec (a record of a part), or
// nil when the part has no such column.
func Column(rec arrow.RecordBatch, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil
	}
	return rec.Column(idx[0])
}

// repeated is a string array of n times v, built from its buffers.
func repeated(mem memory.Allocator, v string, n int) arrow.Array {
	offs := memory.NewResizableBuffer(mem)
	offs.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	o := arrow.Int32Traits.CastFromBytes(offs.Bytes())
	data := memory.NewResizableBuffer(mem)
	data.Resize(len(v) * n)
	d := data.Bytes()
	for i := range n {
		o[i] = int32(i * len(v))
		copy(d[i*len(v):], v)
	}
	o[n] = int32(n * len(v))
	ad := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, offs, data}, nil, 0, 0)
	a := array.NewStringData(ad)
	ad.Release()
	offs.Release()
	data.Release()
	return a
}
