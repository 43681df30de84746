package nexmark

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fieldKind says how a table's field is stored.
type fieldKind uint8

const (
	fInt fieldKind = iota
	fTime
	fString
)

type fieldDef struct {
	name string
	kind fieldKind
}

// The fields of each table, in Flink's Nexmark order. A row is built from
// an event by filling ints[i] or strs[i] for field i.
var tableFields = map[Kind][]fieldDef{
	KindPerson: {{"id", fInt}, {"name", fString}, {"emailAddress", fString}, {"creditCard", fString},
		{"city", fString}, {"state", fString}, {"dateTime", fTime}, {"extra", fString}},
	KindAuction: {{"id", fInt}, {"itemName", fString}, {"description", fString}, {"initialBid", fInt},
		{"reserve", fInt}, {"dateTime", fTime}, {"expires", fTime}, {"seller", fInt}, {"category", fInt}, {"extra", fString}},
	KindBid: {{"auction", fInt}, {"bidder", fInt}, {"price", fInt}, {"channel", fString}, {"url", fString},
		{"dateTime", fTime}, {"extra", fString}},
}

// Columns returns the table's columns as SQL: name and type, in order
// (event times as BIGINT epoch ms).
func Columns(k Kind) string {
	var parts []string
	for _, f := range tableFields[k] {
		t := "BIGINT"
		if f.kind == fString {
			t = "VARCHAR"
		}
		parts = append(parts, f.name+" "+t)
	}
	return strings.Join(parts, ", ")
}

// row holds one event's values by field index.
type row struct {
	ints [10]int64
	strs [10][]byte
}

func (r *row) person(p *Person) {
	r.ints[0], r.strs[1], r.strs[2], r.strs[3] = p.ID, p.Name, p.Email, p.CreditCard
	r.strs[4], r.strs[5], r.ints[6], r.strs[7] = p.City, p.State, p.DateTime, p.Extra
}

func (r *row) auction(a *Auction) {
	r.ints[0], r.strs[1], r.strs[2], r.ints[3], r.ints[4] = a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve
	r.ints[5], r.ints[6], r.ints[7], r.ints[8], r.strs[9] = a.DateTime, a.Expires, a.Seller, a.Category, a.Extra
}

func (r *row) bid(b *Bid) {
	r.ints[0], r.ints[1], r.ints[2], r.strs[3], r.strs[4] = b.Auction, b.Bidder, b.Price, b.Channel, b.URL
	r.ints[5], r.strs[6] = b.DateTime, b.Extra
}

// bindColumns maps the declared schema's columns to the table's fields by
// name (case-insensitive), checking types: BIGINT for numbers, BIGINT or
// TIMESTAMP(3) for times, VARCHAR for strings. Any subset in any order.
func bindColumns(k Kind, schema *arrow.Schema) ([]int, error) {
	defs := tableFields[k]
	out := make([]int, schema.NumFields())
	for c, f := range schema.Fields() {
		idx := -1
		for i, d := range defs {
			if strings.EqualFold(d.name, f.Name) {
				idx = i
			}
		}
		if idx < 0 {
			var names []string
			for _, d := range defs {
				names = append(names, d.name)
			}
			return nil, fmt.Errorf("table %s has no column %s (its columns: %s)", k, f.Name, strings.Join(names, ", "))
		}
		ok := false
		switch defs[idx].kind {
		case fInt:
			ok = f.Type.ID() == arrow.INT64
		case fTime:
			ok = f.Type.ID() == arrow.INT64 || (f.Type.ID() == arrow.TIMESTAMP && f.Type.(*arrow.TimestampType).Unit == arrow.Millisecond)
		case fString:
			ok = f.Type.ID() == arrow.STRING
		}
		if !ok {
			want := map[fieldKind]string{fInt: "BIGINT", fTime: "BIGINT or TIMESTAMP(3)", fString: "VARCHAR"}[defs[idx].kind]
			return nil, fmt.Errorf("column %s of table %s must be %s, not %s", f.Name, k, want, f.Type)
		}
		out[c] = idx
	}
	return out, nil
}

// batchWriter builds one record batch at a time straight into Arrow
// buffers: fixed-width values into a preallocated column, strings into an
// offsets column and a growing data buffer. Nothing is allocated per row.
type batchWriter struct {
	schema *arrow.Schema
	mem    memory.Allocator
	fields []int // column -> field index
	cap    int
	n      int
	cols   []colBuf
}

type colBuf struct {
	str    bool
	vals   *memory.Buffer
	ints   []int64
	offs   []int32
	data   *memory.Buffer
	dat    []byte
	avgLen int
}

func newBatchWriter(k Kind, schema *arrow.Schema, fields []int, mem memory.Allocator, capacity int) *batchWriter {
	w := &batchWriter{schema: schema, mem: mem, fields: fields, cap: capacity, cols: make([]colBuf, len(fields))}
	for c, f := range fields {
		w.cols[c].str = tableFields[k][f].kind == fString
		w.cols[c].avgLen = 16
	}
	w.alloc()
	return w
}

func (w *batchWriter) alloc() {
	for c := range w.cols {
		col := &w.cols[c]
		col.vals = memory.NewResizableBuffer(w.mem)
		if col.str {
			col.vals.Resize(4 * (w.cap + 1))
			col.offs = arrow.Int32Traits.CastFromBytes(col.vals.Bytes())
			col.offs[0] = 0
			col.data = memory.NewResizableBuffer(w.mem)
			col.data.Resize(col.avgLen*w.cap + 64)
			col.dat = col.data.Bytes()
		} else {
			col.vals.Resize(8 * w.cap)
			col.ints = arrow.Int64Traits.CastFromBytes(col.vals.Bytes())
		}
	}
}

// add appends one row.
func (w *batchWriter) add(r *row) {
	n := w.n
	for c, f := range w.fields {
		col := &w.cols[c]
		if !col.str {
			col.ints[n] = r.ints[f]
			continue
		}
		s := r.strs[f]
		start := int(col.offs[n])
		end := start + len(s)
		if end > len(col.dat) {
			col.data.Reserve(max(end, 2*len(col.dat)))
			col.data.Resize(col.data.Cap())
			col.dat = col.data.Bytes()
		}
		copy(col.dat[start:end], s)
		col.offs[n+1] = int32(end)
	}
	w.n++
}

// full reports whether the batch holds capacity rows.
func (w *batchWriter) full() bool { return w.n >= w.cap }

// flush returns the rows added since the last flush as a record (nil when
// there are none) and starts a new batch.
func (w *batchWriter) flush() arrow.RecordBatch {
	n := w.n
	if n == 0 {
		return nil
	}
	arrs := make([]arrow.Array, len(w.cols))
	for c := range w.cols {
		col := &w.cols[c]
		typ := w.schema.Field(c).Type
		var data arrow.ArrayData
		if col.str {
			col.vals.ResizeNoShrink(4 * (n + 1))
			used := int(col.offs[n])
			col.data.ResizeNoShrink(used)
			col.avgLen = max(col.avgLen, used/n+used/n/4+1) // headroom: most batches never grow
			data = array.NewData(typ, n, []*memory.Buffer{nil, col.vals, col.data}, nil, 0, 0)
			col.data.Release()
		} else {
			col.vals.ResizeNoShrink(8 * n)
			data = array.NewData(typ, n, []*memory.Buffer{nil, col.vals}, nil, 0, 0)
		}
		col.vals.Release()
		arrs[c] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecordBatch(w.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	w.n = 0
	w.alloc()
	return rec
}

// release frees the buffers of an unflushed batch.
func (w *batchWriter) release() {
	for c := range w.cols {
		w.cols[c].vals.Release()
		if w.cols[c].data != nil {
			w.cols[c].data.Release()
		}
	}
	w.cols = nil
}
