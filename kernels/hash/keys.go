package hash

import (
	"bytes"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// KeyCol stores one group-key column of a Table, indexed by id, and
// does that column's share of a lookup. A lookup calls prepare once per
// batch, then works on entries k (row rows[k] of the batch column) with one
// typed loop per method; only equal and store are called per entry, on the
// cold re-probe path.
type KeyCol interface {
	prepare(arr arrow.Array, rows []int32, n int)
	hashInto(hs []uint64)
	grow(n int)
	storeNew(ids, ks []int32)
	verify(ids []int32, bad []int32) []int32
	equal(id int32, k int) bool
	store(id int32, k int)
	release(ids []int32, t *Table)
	// freeze returns a copy that shares the stored keys copy-on-write
	// (column.Chunked.Freeze) until h is released; only Build may be
	// called on it.
	freeze(h *column.Hold) KeyCol
	Build(mem memory.Allocator, ids []int32) arrow.Array
}

// NewKeyCol returns the key column for dt, or an error naming the type.
func NewKeyCol(dt arrow.DataType) (KeyCol, error) {
	switch dt.ID() {
	case arrow.INT8:
		return htNewFixedKey[int8](dt, false), nil
	case arrow.INT16:
		return htNewFixedKey[int16](dt, false), nil
	case arrow.INT32, arrow.DATE32:
		return htNewFixedKey[int32](dt, false), nil
	case arrow.INT64, arrow.TIMESTAMP:
		return htNewFixedKey[int64](dt, false), nil
	case arrow.FLOAT32:
		return htNewFixedKey[float32](dt, true), nil
	case arrow.FLOAT64:
		return htNewFixedKey[float64](dt, true), nil
	case arrow.BOOL:
		return &htFixedKey{dt: dt, load: htLoadBool, out: htOutBool}, nil
	case arrow.STRING:
		return &htStrKey{dt: dt}, nil
	}
	return nil, fmt.Errorf("unsupported group key type %s", dt)
}

type htNum interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// htFixedKey holds a fixed-width key column as canonical uint64 bits:
// integers sign-extended, floats as float64 bits with -0 folded into +0 and
// every NaN into one (so NaN groups with NaN), booleans as 0/1.
type htFixedKey struct {
	dt   arrow.DataType
	load func(dst []uint64, arr arrow.Array, rows []int32)
	out  func(mem memory.Allocator, dt arrow.DataType, vals *column.Chunked[uint64], valid *column.Chunked[bool], ids []int32) arrow.Array

	vals       column.Chunked[uint64]
	valid      column.Chunked[bool]
	nullGroups bool // some id ever held NULL: verify must look at valid

	cur     []uint64
	curNull []bool // nil: no NULL in the batch
}

func htNewFixedKey[T htNum](dt arrow.DataType, float bool) *htFixedKey {
	c := &htFixedKey{dt: dt, out: htOutNum[T]}
	if float {
		c.load = htLoadFloat[T]
	} else {
		c.load = htLoadInt[T]
	}
	return c
}

const htCanonNaN = 0x7ff8000000000001

func htFloatBits(f float64) uint64 {
	if f != f {
		return htCanonNaN
	}
	if f == 0 {
		return 0
	}
	return math.Float64bits(f)
}

func htLoadInt[T htNum](dst []uint64, arr arrow.Array, rows []int32) {
	vals := arrow.GetValues[T](arr.Data(), 1)
	if rows == nil {
		vals = vals[:len(dst)]
		for k, v := range vals {
			dst[k] = uint64(int64(v))
		}
		return
	}
	for k, r := range rows[:len(dst)] {
		dst[k] = uint64(int64(vals[r]))
	}
}

func htLoadFloat[T htNum](dst []uint64, arr arrow.Array, rows []int32) {
	vals := arrow.GetValues[T](arr.Data(), 1)
	if rows == nil {
		vals = vals[:len(dst)]
		for k, v := range vals {
			dst[k] = htFloatBits(float64(v))
		}
		return
	}
	for k, r := range rows[:len(dst)] {
		dst[k] = htFloatBits(float64(vals[r]))
	}
}

func htLoadBool(dst []uint64, arr arrow.Array, rows []int32) {
	vb := arr.Data().Buffers()[1]
	if vb == nil {
		clear(dst)
		return
	}
	bm, off := vb.Bytes(), arr.Data().Offset()
	for k := range dst {
		i := off + k
		if rows != nil {
			i = off + int(rows[k])
		}
		dst[k] = uint64(bm[i>>3]>>(i&7)) & 1
	}
}

func (c *htFixedKey) prepare(arr arrow.Array, rows []int32, n int) {
	c.cur = column.Grow(c.cur, n)
	c.load(c.cur, arr, rows)
	c.curNull = column.Nulls(c.curNull[:0], arr, rows, n)
	if c.curNull != nil {
		for k, isNull := range c.curNull {
			if isNull {
				c.cur[k] = 0
			}
		}
	}
}

func (c *htFixedKey) hashInto(hs []uint64) {
	cur := c.cur[:len(hs)]
	if c.curNull == nil {
		for k, v := range cur {
			hs[k] = (hs[k] ^ v) * htK1
		}
		return
	}
	nulls := c.curNull[:len(hs)]
	for k, v := range cur {
		if nulls[k] {
			v = htNullHash
		}
		hs[k] = (hs[k] ^ v) * htK1
	}
}

func (c *htFixedKey) grow(n int) {
	c.vals.Grow(n)
	c.valid.GrowFill(n, true)
}

func (c *htFixedKey) storeNew(ids, ks []int32) {
	for j, id := range ids {
		c.store(id, int(ks[j]))
	}
}

func (c *htFixedKey) store(id int32, k int) {
	*c.vals.W(id) = c.cur[k]
	ok := c.curNull == nil || !c.curNull[k]
	*c.valid.W(id) = ok
	if !ok {
		c.nullGroups = true
	}
}

func (c *htFixedKey) verify(ids []int32, bad []int32) []int32 {
	cur := c.cur[:len(ids)]
	vals := c.vals
	if c.curNull == nil && !c.nullGroups {
		for k, id := range ids {
			if *vals.At(id) != cur[k] {
				bad = append(bad, int32(k))
			}
		}
		return bad
	}
	for k, id := range ids {
		if !c.equal(id, k) {
			bad = append(bad, int32(k))
		}
	}
	return bad
}

func (c *htFixedKey) equal(id int32, k int) bool {
	isNull := c.curNull != nil && c.curNull[k]
	if valid := *c.valid.At(id); isNull || !valid {
		return isNull == !valid
	}
	return *c.vals.At(id) == c.cur[k]
}

func (c *htFixedKey) release([]int32, *Table) {}

func (c *htFixedKey) freeze(h *column.Hold) KeyCol {
	return &htFixedKey{dt: c.dt, out: c.out, vals: c.vals.Freeze(h), valid: c.valid.Freeze(h)}
}

func (c *htFixedKey) Build(mem memory.Allocator, ids []int32) arrow.Array {
	return c.out(mem, c.dt, &c.vals, &c.valid, ids)
}

func htOutNum[T htNum](mem memory.Allocator, dt arrow.DataType, vals *column.Chunked[uint64], valid *column.Chunked[bool], ids []int32) arrow.Array {
	var zero T
	float := T(1)/T(2) != zero
	o := column.NewFixed[T](mem, dt, len(ids))
	for j, id := range ids {
		if !*valid.At(id) {
			o.SetNull(j)
			continue
		}
		if float {
			o.Vals[j] = T(math.Float64frombits(*vals.At(id)))
		} else {
			o.Vals[j] = T(int64(*vals.At(id)))
		}
	}
	return o.Finish()
}

func htOutBool(mem memory.Allocator, dt arrow.DataType, vals *column.Chunked[uint64], valid *column.Chunked[bool], ids []int32) arrow.Array {
	o := column.NewBool(mem, len(ids))
	for j, id := range ids {
		if !*valid.At(id) {
			o.SetNull(j)
		} else if *vals.At(id) != 0 {
			bitutil.SetBit(o.Bits, j)
		}
	}
	return o.Finish()
}

// htStrKey holds a string key column in one append-only arena of
// length-prefixed values with a position per id (htNullPos for NULL).
// Bytes of removed ids become garbage; the arena is compacted when garbage
// outweighs live bytes.
type htStrKey struct {
	dt         arrow.DataType
	arena      column.Arena
	off        column.Chunked[uint32]
	nullGroups bool
	garbage    int

	curOffs []int32
	curData []byte
	rows    []int32
	curNull []bool
	n       int
}

func (c *htStrKey) prepare(arr arrow.Array, rows []int32, n int) {
	a := arr.(*array.String)
	c.curOffs = a.ValueOffsets()
	c.curData = nil
	if b := a.Data().Buffers()[2]; b != nil {
		c.curData = b.Bytes()
	}
	c.rows, c.n = rows, n
	c.curNull = column.Nulls(c.curNull[:0], arr, rows, n)
}

func (c *htStrKey) at(k int) []byte {
	r := k
	if c.rows != nil {
		r = int(c.rows[k])
	}
	return c.curData[c.curOffs[r]:c.curOffs[r+1]]
}

func (c *htStrKey) hashInto(hs []uint64) {
	offs, data := c.curOffs, c.curData
	switch {
	case c.curNull != nil:
		for k := range hs {
			v := uint64(htNullHash)
			if !c.curNull[k] {
				v = htHashBytes(c.at(k))
			}
			hs[k] = (hs[k] ^ v) * htK1
		}
	case c.rows == nil:
		for k := range hs {
			hs[k] = (hs[k] ^ htHashBytes(data[offs[k]:offs[k+1]])) * htK1
		}
	default:
		for k, r := range c.rows[:len(hs)] {
			hs[k] = (hs[k] ^ htHashBytes(data[offs[r]:offs[r+1]])) * htK1
		}
	}
}

// htNullPos is the position of a NULL key.
const htNullPos = math.MaxUint32

func (c *htStrKey) grow(n int) { c.off.Grow(n) }

func (c *htStrKey) storeNew(ids, ks []int32) {
	for j, id := range ids {
		c.store(id, int(ks[j]))
	}
}

func (c *htStrKey) store(id int32, k int) {
	if c.curNull != nil && c.curNull[k] {
		*c.off.W(id) = htNullPos
		c.nullGroups = true
		return
	}
	*c.off.W(id) = c.arena.Append(c.at(k))
}

func (c *htStrKey) valid(id int32) bool { return *c.off.At(id) != htNullPos }

func (c *htStrKey) key(id int32) []byte { return c.arena.Value(*c.off.At(id)) }

func (c *htStrKey) verify(ids []int32, bad []int32) []int32 {
	if c.curNull == nil && !c.nullGroups {
		offs, data := c.curOffs, c.curData
		for k, id := range ids {
			r := k
			if c.rows != nil {
				r = int(c.rows[k])
			}
			if !bytes.Equal(c.key(id), data[offs[r]:offs[r+1]]) {
				bad = append(bad, int32(k))
			}
		}
		return bad
	}
	for k, id := range ids {
		if !c.equal(id, k) {
			bad = append(bad, int32(k))
		}
	}
	return bad
}

func (c *htStrKey) equal(id int32, k int) bool {
	isNull := c.curNull != nil && c.curNull[k]
	if valid := c.valid(id); isNull || !valid {
		return isNull == !valid
	}
	return bytes.Equal(c.key(id), c.at(k))
}

func (c *htStrKey) release(ids []int32, t *Table) {
	for _, id := range ids {
		if c.valid(id) {
			c.garbage += len(c.key(id)) + 1
		}
	}
	if c.garbage < 1<<16 || c.garbage*2 < c.arena.Size() {
		return
	}
	var arena column.Arena
	for id := range int32(t.Size()) {
		if t.Live(id) && c.valid(id) {
			*c.off.W(id) = arena.Append(c.key(id))
		}
	}
	c.arena.Free()
	c.arena, c.garbage = arena, 0
}

func (c *htStrKey) freeze(h *column.Hold) KeyCol {
	return &htStrKey{dt: c.dt, arena: c.arena.Freeze(h), off: c.off.Freeze(h)}
}

// Build emits the keys of ids in one pass over the arena: the values are
// located once, then copied into the array's buffers.
func (c *htStrKey) Build(mem memory.Allocator, ids []int32) arrow.Array {
	n := len(ids)
	vals := make([][]byte, n)
	total, nulls := 0, 0
	for j, id := range ids {
		if p := *c.off.At(id); p != htNullPos {
			vals[j] = c.arena.Value(p)
			total += len(vals[j])
		} else {
			nulls++
		}
	}
	ob := memory.NewResizableBuffer(mem)
	ob.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	db := memory.NewResizableBuffer(mem)
	db.Resize(total)
	data := db.Bytes()
	var vb *memory.Buffer
	var valid []byte
	if nulls > 0 {
		vb = memory.NewResizableBuffer(mem)
		vb.Resize(int(bitutil.BytesForBits(int64(n))))
		valid = vb.Bytes()
		clear(valid)
	}
	at := 0
	offs[0] = 0
	for j, v := range vals {
		if valid != nil && *c.off.At(ids[j]) != htNullPos {
			bitutil.SetBit(valid, j)
		}
		at += copy(data[at:], v)
		offs[j+1] = int32(at)
	}
	d := array.NewData(c.dt, n, []*memory.Buffer{vb, ob, db}, nil, nulls, 0)
	a := array.MakeFromData(d)
	d.Release()
	ob.Release()
	db.Release()
	if vb != nil {
		vb.Release()
	}
	return a
}
