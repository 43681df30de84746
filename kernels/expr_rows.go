package kernels

import (
	"math/bits"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// The skeleton of a row-wise strict function (NULL in, NULL out): evaluate
// the operands that are not literals, AND their validity, list the live
// rows that are not NULL, and hand those to a typed kernel that loops over
// them once per batch. Kernels see literals as scalars and never call
// through an interface per row.

// scFuncExpr is a strict function of its operands.
type scFuncExpr struct {
	name  string
	typ   arrow.DataType
	args  []Expr
	lits  []*exprLit // lits[k] != nil: operand k is that literal
	fails bool       // the kernel itself can fail for some input
	// kern computes the result from the evaluated operands. It owns the
	// validity it takes (scCall.takeValid) and must close every row.
	kern func(c *scCall) (arrow.Array, error)
}

// newScFunc builds a strict function over args, noting the literal operands.
func newScFunc(name string, typ arrow.DataType, args []Expr, fails bool, kern func(c *scCall) (arrow.Array, error)) *scFuncExpr {
	e := &scFuncExpr{name: name, typ: typ, args: args, lits: make([]*exprLit, len(args)), fails: fails, kern: kern}
	for k, a := range args {
		if l, ok := scIsLiteral(a); ok {
			e.lits[k] = l
		}
	}
	return e
}

func (e *scFuncExpr) Type() arrow.DataType { return e.typ }

func (e *scFuncExpr) String() string {
	s := make([]string, len(e.args))
	for i, a := range e.args {
		s[i] = a.String()
	}
	return e.name + "(" + strings.Join(s, ", ") + ")"
}

func (e *scFuncExpr) exprMayFail() bool {
	if e.fails {
		return true
	}
	for _, a := range e.args {
		if exprMayFail(a) {
			return true
		}
	}
	return false
}

func (e *scFuncExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, e.typ), nil
	}
	c := &scCall{n: n, mem: mem, arrs: make([]arrow.Array, len(e.args)), lits: e.lits, sel: b.Sel}
	defer c.release()
	for k, a := range e.args {
		if e.lits[k] != nil {
			continue
		}
		arr, err := a.Eval(b, mem)
		if err != nil {
			return nil, err
		}
		c.arrs[k] = arr
	}
	c.valid, c.nulls = scValidityN(mem, n, c.arrs)
	var vb []byte
	if c.valid != nil {
		vb = c.valid.Bytes()
	}
	c.rows = scLiveValid(n, b.Sel, vb)
	return e.kern(c)
}

// scCall is one evaluation of a scFuncExpr.
type scCall struct {
	n     int
	mem   memory.Allocator
	arrs  []arrow.Array // nil where the operand is a literal
	lits  []*exprLit
	sel   []int32        // the batch's selection
	valid *memory.Buffer // AND of the operands' validity; nil: none NULL
	owned bool           // valid is this call's own copy (may be written)
	nulls int
	rows  []int32 // live rows where no operand is NULL, ascending
}

func (c *scCall) release() {
	for _, a := range c.arrs {
		if a != nil {
			a.Release()
		}
	}
	if c.valid != nil {
		c.valid.Release()
		c.valid = nil
	}
}

// takeValid hands the result's validity (and null count) to the caller.
func (c *scCall) takeValid() (*memory.Buffer, int) {
	v, n := c.valid, c.nulls
	c.valid = nil
	return v, n
}

// setNull makes row i of the result NULL (a kernel's own NULL: an
// out-of-range argument, text that does not parse).
func (c *scCall) setNull(i int) {
	if !c.owned {
		buf, bits := scAllocBitmap(c.mem, c.n)
		if c.valid == nil {
			for k := range bits {
				bits[k] = 0xff
			}
		} else {
			copy(bits, c.valid.Bytes())
			c.valid.Release()
		}
		c.valid, c.owned = buf, true
	}
	bits := c.valid.Bytes()
	if bitutil.BitIsSet(bits, i) {
		bitutil.ClearBit(bits, i)
		c.nulls++
	}
}

// result wraps the kernel's value buffers with the call's validity.
func (c *scCall) result(t arrow.DataType, bufs ...*memory.Buffer) arrow.Array {
	v, nulls := c.takeValid()
	return scMakeArray(t, c.n, v, nulls, bufs...)
}

// strResult finishes a string writer with the call's validity.
func (c *scCall) strResult(t arrow.DataType, w *scStrWriter) arrow.Array {
	v, nulls := c.takeValid()
	return w.finish(t, v, nulls)
}

// scStrArg reads a VARCHAR operand: a column or a literal.
type scStrArg struct {
	offs  []int32
	data  []byte
	lit   []byte
	isLit bool
}

func (s *scStrArg) at(i int) []byte {
	if s.isLit {
		return s.lit
	}
	return s.data[s.offs[i]:s.offs[i+1]]
}

// size is the operand's total byte size (for output size estimates).
func (s *scStrArg) size(n int) int {
	if s.isLit {
		return len(s.lit) * n
	}
	return len(s.data)
}

func (c *scCall) str(k int) scStrArg {
	if l := c.lits[k]; l != nil {
		return scStrArg{lit: []byte(l.s), isLit: true}
	}
	offs, data := scStrings(c.arrs[k])
	return scStrArg{offs: offs, data: data}
}

// scNumArg reads a fixed-width operand: a column or a literal.
type scNumArg[T scFixed] struct {
	v     []T
	lit   T
	isLit bool
}

func (a *scNumArg[T]) at(i int) T {
	if a.isLit {
		return a.lit
	}
	return a.v[i]
}

func scCallNum[T scNum](c *scCall, k int) scNumArg[T] {
	if l := c.lits[k]; l != nil {
		return scNumArg[T]{lit: scLitNum[T](l), isLit: true}
	}
	return scNumArg[T]{v: scValues[T](c.arrs[k])}
}

func scCallDec(c *scCall, k int) scNumArg[scDec] {
	if l := c.lits[k]; l != nil {
		return scNumArg[scDec]{lit: l.d, isLit: true}
	}
	return scNumArg[scDec]{v: scValues[scDec](c.arrs[k])}
}

// scValidityN is the AND of the validity of arrs (nil entries are
// non-NULL literals); nil if no row is NULL.
func scValidityN(mem memory.Allocator, n int, arrs []arrow.Array) (*memory.Buffer, int) {
	var withNulls []arrow.Array
	for _, a := range arrs {
		if a != nil && a.NullN() > 0 {
			withNulls = append(withNulls, a)
		}
	}
	switch len(withNulls) {
	case 0:
		return nil, 0
	case 1:
		return scShareValidity(mem, withNulls[0])
	case 2:
		return scValidity2(mem, n, withNulls[0], withNulls[1])
	}
	out, bits := scAllocBitmap(mem, n)
	for w := range scWords(n) {
		scStoreWord(bits, w, ^uint64(0))
	}
	for _, a := range withNulls {
		if a.Data().Buffers()[0] == nil { // Null-type operand
			clear(bits)
			return out, n
		}
		v := scBitmapBytes(a, 0)
		for w := range scWords(n) {
			scStoreWord(bits, w, scLoadWord(bits, w)&scLoadWord(v, w))
		}
	}
	return out, n - bitutil.CountSetBits(bits, 0, n)
}

// scLiveValid lists the live rows (sel; nil = every row) whose bit in valid
// is set (valid nil: all of them), ascending. The result may alias sel or a
// shared read-only index table: callers never write it.
func scLiveValid(n int, sel []int32, valid []byte) []int32 {
	if valid == nil {
		if sel != nil {
			return sel
		}
		return scIota(n)
	}
	var out []int32
	if sel != nil {
		out = make([]int32, 0, len(sel))
		for _, i := range sel {
			if bitutil.BitIsSet(valid, int(i)) {
				out = append(out, i)
			}
		}
		return out
	}
	out = make([]int32, 0, n)
	for w := range scWords(n) {
		v := scLoadWord(valid, w)
		if rem := n - w*64; rem < 64 {
			v &= 1<<uint(rem) - 1
		}
		base := int32(w * 64)
		if v == ^uint64(0) {
			for k := int32(0); k < 64; k++ {
				out = append(out, base+k)
			}
			continue
		}
		for v != 0 {
			out = append(out, base+int32(bits.TrailingZeros64(v)))
			v &= v - 1
		}
	}
	return out
}

var (
	scIotaOnce  sync.Once
	scIotaTable []int32
)

// scIota is 0, 1, ..., n-1, read-only.
func scIota(n int) []int32 {
	const shared = 1 << 14
	if n > shared {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	scIotaOnce.Do(func() {
		scIotaTable = make([]int32, shared)
		for i := range scIotaTable {
			scIotaTable[i] = int32(i)
		}
	})
	return scIotaTable[:n:n]
}

// scSubBatch is b restricted to the live rows sel.
func scSubBatch(b *vector.Batch, sel []int32) *vector.Batch {
	return &vector.Batch{Rec: b.Rec, Sel: sel, RowWatermark: b.RowWatermark}
}

// unsafeString views b as a string without copying; the string must not
// outlive b or be retained.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
