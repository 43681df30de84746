package join

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A side's stored rows live column by column in fixed-size chunks: a
// chunk is never copied when the column grows (a new one is added), and
// compaction moves rows down in place and lets go of the chunks it
// empties, keeping one spare for the next rows. The join copies the
// values of the rows it keeps out of their input batch, so it retains no
// input batch and holds no Arrow memory.
const (
	chunkBits = 12
	chunkRows = 1 << chunkBits
	chunkMask = chunkRows - 1
)

// chunks is a column of T indexed by stored row. A chunk is an array, so
// indexing in one needs no bounds check.
type chunks[T any] struct {
	c []*[chunkRows]T
	n int32
}

func (c *chunks[T]) at(i int32) T     { return c.c[i>>chunkBits][i&chunkMask] }
func (c *chunks[T]) ptr(i int32) *T   { return &c.c[i>>chunkBits][i&chunkMask] }
func (c *chunks[T]) set(i int32, v T) { c.c[i>>chunkBits][i&chunkMask] = v }

func (c *chunks[T]) push(v T) {
	if int(c.n>>chunkBits) == len(c.c) {
		c.c = append(c.c, new([chunkRows]T))
	}
	c.c[c.n>>chunkBits][c.n&chunkMask] = v
	c.n++
}

// truncate keeps the first n rows. Of the chunks past them it keeps as
// many as half the used ones for the rows to come (a join that expires
// rows gets as many new ones), and releases the others.
func (c *chunks[T]) truncate(n int32) {
	c.n = n
	used := int(n+chunkMask) >> chunkBits
	keep := used + max(1, used/2)
	if keep < len(c.c) {
		clear(c.c[keep:])
		c.c = c.c[:keep]
	}
}

// compact moves the rows that remap keeps (remap[i] >= 0, increasing) to
// their new places and truncates to n rows.
func (c *chunks[T]) compact(remap []int32, n int32) {
	for i, to := range remap {
		if to >= 0 && to != int32(i) {
			c.set(to, c.at(int32(i)))
		}
	}
	c.truncate(n)
}

// valueCol holds one input column of a side's stored rows.
type valueCol interface {
	// push appends rows of a.
	push(a arrow.Array, rows []int32)
	// gather appends stored rows refs (-1 = NULL) to bld, whose type is
	// the column's.
	gather(bld array.Builder, refs []int32)
	// equal compares stored row i with row r of a (same type, neither
	// NULL) as the hash table does: floats by bits, strings by bytes.
	equal(i int32, a arrow.Array, r int) bool
	// compact moves the rows that remap keeps (remap[i] >= 0,
	// increasing) to their new places and truncates to n rows.
	compact(remap []int32, n int32)
}

// newValueCol is the column store of type t, nil for a type the join
// cannot output (Gather reports it).
func newValueCol(t arrow.DataType) valueCol {
	switch t.ID() {
	case arrow.INT8:
		return &fixedCol[int8]{}
	case arrow.INT16:
		return &fixedCol[int16]{}
	case arrow.INT32:
		return &fixedCol[int32]{}
	case arrow.INT64:
		return &fixedCol[int64]{}
	case arrow.FLOAT32:
		return &fixedCol[float32]{eq: func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }}
	case arrow.FLOAT64:
		return &fixedCol[float64]{eq: func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }}
	case arrow.TIMESTAMP:
		return &fixedCol[arrow.Timestamp]{}
	case arrow.DECIMAL128:
		return &fixedCol[decimal128.Num]{}
	case arrow.STRING:
		return &stringCol{}
	case arrow.BOOL:
		return &boolCol{}
	}
	return nil
}

// validity is a column's NULL flags, kept only once a NULL arrived.
type validity struct {
	valid   chunks[bool]
	hasNull bool
}

// mark records row i (the next one) as valid or not.
func (v *validity) mark(i int32, ok bool) {
	if !ok && !v.hasNull {
		v.hasNull = true
		for v.valid.n < i {
			v.valid.push(true)
		}
	}
	if v.hasNull {
		v.valid.push(ok)
	}
}

func (v *validity) null(i int32) bool { return v.hasNull && !v.valid.at(i) }

func (v *validity) compact(remap []int32, n int32) {
	if v.hasNull {
		v.valid.compact(remap, n)
	}
}

// fixedCol holds a fixed-width column; eq, when set, replaces == (floats
// compare by bits).
type fixedCol[T arrow.FixedWidthType] struct {
	vals chunks[T]
	validity
	eq func(a, b T) bool
}

func (c *fixedCol[T]) push(a arrow.Array, rows []int32) {
	raw := arrow.GetValues[T](a.Data(), 1)
	// Not NullN: an array whose null count is not known yet computes and
	// stores it, and a batch can be shared by the subtasks of a self-join.
	nulls := a.NullBitmapBytes() != nil
	for _, r := range rows {
		var v T
		ok := !nulls || a.IsValid(int(r))
		if ok {
			v = raw[r]
		}
		c.mark(c.vals.n, ok)
		c.vals.push(v)
	}
}

func (c *fixedCol[T]) gather(bld array.Builder, refs []int32) {
	vals := make([]T, len(refs))
	var valid []bool
	markNull := func(k int) {
		if valid == nil {
			valid = make([]bool, len(refs))
			for i := 0; i < k; i++ {
				valid[i] = true
			}
		}
	}
	for k, ref := range refs {
		if ref < 0 || c.null(ref) {
			markNull(k)
			continue
		}
		vals[k] = c.vals.at(ref)
		if valid != nil {
			valid[k] = true
		}
	}
	bld.(interface{ AppendValues([]T, []bool) }).AppendValues(vals, valid)
}

func (c *fixedCol[T]) equal(i int32, a arrow.Array, r int) bool {
	v := arrow.GetValues[T](a.Data(), 1)[r]
	if c.eq != nil {
		return c.eq(c.vals.at(i), v)
	}
	return c.vals.at(i) == v
}

func (c *fixedCol[T]) compact(remap []int32, n int32) {
	c.vals.compact(remap, n)
	c.validity.compact(remap, n)
}

type boolCol struct {
	vals chunks[bool]
	validity
}

func (c *boolCol) push(a arrow.Array, rows []int32) {
	b := a.(*array.Boolean)
	for _, r := range rows {
		ok := b.IsValid(int(r))
		c.mark(c.vals.n, ok)
		c.vals.push(ok && b.Value(int(r)))
	}
}

func (c *boolCol) gather(bld array.Builder, refs []int32) {
	bb := bld.(*array.BooleanBuilder)
	for _, ref := range refs {
		if ref < 0 || c.null(ref) {
			bb.AppendNull()
			continue
		}
		bb.Append(c.vals.at(ref))
	}
}

func (c *boolCol) equal(i int32, a arrow.Array, r int) bool {
	return c.vals.at(i) == a.(*array.Boolean).Value(r)
}

func (c *boolCol) compact(remap []int32, n int32) {
	c.vals.compact(remap, n)
	c.validity.compact(remap, n)
}

// stringCol holds a utf8 column: each value's bytes are copied into
// fixed blocks (a value longer than a block gets one of its own),
// addressed by a strRef per row. A block counts its live values and is
// released when the last one dies, so that a join whose rows expire in
// about their arrival order (interval joins) frees the bytes of expired
// values without copying the others. A column that has held only NULLs
// (one projection pushdown left unread) keeps no refs.
type stringCol struct {
	refs   chunks[strRef] // empty while every value is NULL
	nulls  int32          // rows while refs is empty
	blocks [][]byte
	live   []int32  // live values by block
	spare  [][]byte // released blocks kept for new values
}

// spareBlocks bounds the released blocks a column keeps for reuse: enough
// for the values that arrive while as many expire, at about the
// granularity at which they expire.
const spareBlocks = 16

// strRef is a value's block, offset and length; n < 0 is NULL.
type strRef struct {
	blk, off, n int32
}

const blockBytes = 64 << 10

func (c *stringCol) push(a arrow.Array, rows []int32) {
	s := a.(*array.String)
	for _, r := range rows {
		if s.IsNull(int(r)) {
			if c.refs.n == 0 {
				c.nulls++
			} else {
				c.refs.push(strRef{n: -1})
			}
			continue
		}
		for ; c.nulls > 0; c.nulls-- {
			c.refs.push(strRef{n: -1})
		}
		c.refs.push(c.store(s.Value(int(r))))
	}
}

// store copies v into the blocks.
func (c *stringCol) store(v string) strRef {
	if len(v) == 0 {
		return strRef{}
	}
	last := len(c.blocks) - 1
	if last < 0 || len(c.blocks[last])+len(v) > cap(c.blocks[last]) {
		var b []byte
		if k := len(c.spare) - 1; k >= 0 && len(v) <= blockBytes {
			b, c.spare = c.spare[k][:0], c.spare[:k]
		} else {
			b = make([]byte, 0, max(blockBytes, len(v)))
		}
		c.blocks = append(c.blocks, b)
		c.live = append(c.live, 0)
		last++
	}
	b := c.blocks[last]
	ref := strRef{blk: int32(last), off: int32(len(b)), n: int32(len(v))}
	c.blocks[last] = append(b, v...)
	c.live[last]++
	return ref
}

func (c *stringCol) ref(i int32) strRef {
	if c.refs.n == 0 {
		return strRef{n: -1}
	}
	return c.refs.at(i)
}

// kill lets go of stored row i's value.
func (c *stringCol) kill(i int32) {
	if ref := c.ref(i); ref.n > 0 {
		if c.live[ref.blk]--; c.live[ref.blk] == 0 {
			if b := c.blocks[ref.blk]; cap(b) == blockBytes && len(c.spare) < spareBlocks {
				c.spare = append(c.spare, b)
			}
			c.blocks[ref.blk] = nil
		}
	}
}

// value is stored row i's bytes (not NULL) as a string sharing the block.
func (c *stringCol) value(i int32) string {
	ref := c.ref(i)
	if ref.n <= 0 {
		return ""
	}
	return unsafe.String(&c.blocks[ref.blk][ref.off], int(ref.n))
}

func (c *stringCol) gather(bld array.Builder, refs []int32) {
	sb := bld.(*array.StringBuilder)
	for _, ref := range refs {
		if ref < 0 || c.ref(ref).n < 0 {
			sb.AppendNull()
			continue
		}
		sb.Append(c.value(ref))
	}
}

func (c *stringCol) equal(i int32, a arrow.Array, r int) bool {
	return c.value(i) == a.(*array.String).Value(r)
}

// compact moves the refs and drops the released blocks in front.
func (c *stringCol) compact(remap []int32, n int32) {
	if c.refs.n == 0 {
		c.nulls = n
		return
	}
	drop := 0
	for drop < len(c.blocks)-1 && c.live[drop] == 0 {
		drop++
	}
	c.blocks = append(c.blocks[:0], c.blocks[drop:]...)
	clear(c.blocks[len(c.blocks):cap(c.blocks)][:drop])
	c.live = append(c.live[:0], c.live[drop:]...)
	for i, to := range remap {
		if to < 0 {
			continue
		}
		ref := c.refs.at(int32(i))
		if ref.n > 0 {
			ref.blk -= int32(drop)
		}
		c.refs.set(to, ref)
	}
	c.refs.truncate(n)
}

// gatherCol builds column c of the stored rows refs (-1 = NULL).
func gatherCol(mem memory.Allocator, t arrow.DataType, col valueCol, refs []int32) (arrow.Array, error) {
	if col == nil {
		return nil, fmt.Errorf("join: columns of type %s are not supported", t)
	}
	bld := array.NewBuilder(mem, t)
	defer bld.Release()
	bld.Reserve(len(refs))
	col.gather(bld, refs)
	return bld.NewArray(), nil
}
