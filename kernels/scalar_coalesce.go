package kernels

import (
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

func bindCoalesce(args []Expr) (Expr, error) {
	t, ok := scCommonTypes(args)
	k := scKindOf(t)
	if !ok || k == skNull {
		return nil, scSigError("coalesce", args)
	}
	ops := make([]Expr, 0, len(args))
	for _, a := range args {
		if scIsNullLiteral(a) {
			continue
		}
		c, err := scCoerce(a, k, t)
		if err != nil {
			return nil, err
		}
		ops = append(ops, c)
		if _, ok := scIsLiteral(c); ok {
			break // a non-NULL constant: later operands are never reached
		}
	}
	switch len(ops) {
	case 0:
		return Literal(nil, t)
	case 1:
		return ops[0], nil
	}
	e := &coalesceExpr{typ: t, kind: k, args: ops}
	if lit, ok := scIsLiteral(ops[len(ops)-1]); ok {
		e.lit = lit
	}
	return e, nil
}

// coalesceExpr evaluates its first operand over the live rows, each later
// one only over the rows still NULL, and gathers every row from the operand
// that supplied it. A trailing literal is used as a scalar.
type coalesceExpr struct {
	typ  arrow.DataType
	kind scKind
	args []Expr
	lit  *exprLit // the last operand, if it is a literal
}

func (e *coalesceExpr) Type() arrow.DataType { return e.typ }

func (e *coalesceExpr) String() string {
	s := make([]string, len(e.args))
	for i, a := range e.args {
		s[i] = a.String()
	}
	return "coalesce(" + strings.Join(s, ", ") + ")"
}

func (e *coalesceExpr) exprMayFail() bool {
	for _, a := range e.args {
		if exprMayFail(a) {
			return true
		}
	}
	return false
}

func (e *coalesceExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, e.typ), nil
	}
	first, err := e.args[0].Eval(b, mem)
	if err != nil {
		return nil, err
	}
	if first.NullN() == 0 {
		return first, nil
	}
	switch e.kind {
	case skInt8:
		return scCoalesceFixed[int8](e, b, mem, first)
	case skInt16:
		return scCoalesceFixed[int16](e, b, mem, first)
	case skInt32:
		return scCoalesceFixed[int32](e, b, mem, first)
	case skInt64, skTimestamp:
		return scCoalesceFixed[int64](e, b, mem, first)
	case skFloat32:
		return scCoalesceFixed[float32](e, b, mem, first)
	case skFloat64:
		return scCoalesceFixed[float64](e, b, mem, first)
	case skDecimal:
		return scCoalesceFixed[scDec](e, b, mem, first)
	}
	arrs := []arrow.Array{first}
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	// src[i] is the operand that row i comes from, -1 for NULL.
	src := make([]int32, n)
	var pending []int32
	valid0 := scBitmapBytes(first, 0)
	visit := func(i int32) {
		if valid0 == nil || bitutil.BitIsSet(valid0, int(i)) {
			src[i] = 0
		} else {
			src[i] = -1
			pending = append(pending, i)
		}
	}
	if b.Sel != nil {
		for i := range src {
			src[i] = -1
		}
		for _, i := range b.Sel {
			visit(i)
		}
	} else {
		for i := range src {
			visit(int32(i))
		}
	}
	for k := 1; k < len(e.args) && len(pending) > 0; k++ {
		if k == len(e.args)-1 && e.lit != nil {
			for _, i := range pending {
				src[i] = int32(k)
			}
			break
		}
		arr, err := e.args[k].Eval(&vector.Batch{Rec: b.Rec, Sel: pending, RowWatermark: b.RowWatermark}, mem)
		if err != nil {
			return nil, err
		}
		arrs = append(arrs, arr)
		valid := scBitmapBytes(arr, 0)
		if arr.NullN() == 0 {
			valid = nil
		}
		next := pending[:0] // filtered in place: writes never pass reads
		for _, i := range pending {
			if valid == nil || bitutil.BitIsSet(valid, int(i)) {
				src[i] = int32(k)
			} else {
				next = append(next, i)
			}
		}
		pending = next
	}
	litIdx := int32(-2)
	if e.lit != nil {
		litIdx = int32(len(e.args) - 1)
	}
	vbuf, vbits := scAllocBitmap(mem, n)
	clear(vbits)
	nulls := n
	for i, s := range src {
		if s >= 0 {
			bitutil.SetBit(vbits, i)
			nulls--
		}
	}
	switch e.kind {
	case skBool:
		buf, out := scAllocBitmap(mem, n)
		clear(out)
		vals := make([][]byte, len(arrs))
		for k, a := range arrs {
			vals[k] = scBitmapBytes(a, 1)
		}
		for i, s := range src {
			switch {
			case s == litIdx:
				if e.lit.b {
					bitutil.SetBit(out, i)
				}
			case s >= 0:
				if bitutil.BitIsSet(vals[s], i) {
					bitutil.SetBit(out, i)
				}
			}
		}
		return scMakeArray(e.typ, n, vbuf, nulls, buf), nil
	default: // skString
		type strs struct {
			offs []int32
			data []byte
		}
		vals := make([]strs, len(arrs))
		total := 0
		for k, a := range arrs {
			vals[k].offs, vals[k].data = scStrings(a)
			total += len(vals[k].data)
		}
		w := newScStrWriter(mem, n, total)
		for i, s := range src {
			switch {
			case s == litIdx:
				w.appendString(e.lit.s)
			case s >= 0:
				v := vals[s]
				w.appendBytes(v.data[v.offs[i]:v.offs[i+1]])
			}
			w.endRow(i)
		}
		return w.finish(e.typ, vbuf, nulls), nil
	}
}

// scCoalesceFixed is COALESCE over fixed-width values: it starts from the
// first operand's values and validity and overwrites only the rows still
// NULL. It takes over first.
func scCoalesceFixed[T scFixed](e *coalesceExpr, b *vector.Batch, mem memory.Allocator, first arrow.Array) (arrow.Array, error) {
	defer first.Release()
	n := b.NumRows()
	buf, o := scAllocValues[T](mem, n)
	copy(o, scValues[T](first))
	vbuf, vbits := scAllocBitmap(mem, n)
	fv := scBitmapBytes(first, 0)
	for w := 0; w < scWords(n); w++ {
		scStoreWord(vbits, w, scLoadWord(fv, w))
	}
	pending := scNullRows(vbits, n, b.Sel)
	for k := 1; k < len(e.args) && len(pending) > 0; k++ {
		if k == len(e.args)-1 && e.lit != nil {
			v := scLitFixed[T](e.lit)
			for _, i := range pending {
				o[i] = v
				bitutil.SetBit(vbits, int(i))
			}
			break
		}
		arr, err := e.args[k].Eval(&vector.Batch{Rec: b.Rec, Sel: pending, RowWatermark: b.RowWatermark}, mem)
		if err != nil {
			buf.Release()
			vbuf.Release()
			return nil, err
		}
		v := scValues[T](arr)
		var av []byte
		if arr.NullN() > 0 {
			av = scBitmapBytes(arr, 0)
		}
		next := pending[:0] // filtered in place: writes never pass reads
		for _, i := range pending {
			if av == nil || bitutil.BitIsSet(av, int(i)) {
				o[i] = v[i]
				bitutil.SetBit(vbits, int(i))
			} else {
				next = append(next, i)
			}
		}
		arr.Release()
		pending = next
	}
	nulls := n - bitutil.CountSetBits(vbits, 0, n)
	return scMakeArray(e.typ, n, vbuf, nulls, buf), nil
}

// scNullRows lists the live rows whose bit in valid is clear.
func scNullRows(valid []byte, n int, sel []int32) []int32 {
	var out []int32
	if sel != nil {
		for _, i := range sel {
			if !bitutil.BitIsSet(valid, int(i)) {
				out = append(out, i)
			}
		}
		return out
	}
	for w := 0; w < scWords(n); w++ {
		v := ^scLoadWord(valid, w)
		if rem := n - w*64; rem < 64 {
			v &= 1<<uint(rem) - 1
		}
		for v != 0 {
			out = append(out, int32(w*64+bits.TrailingZeros64(v)))
			v &= v - 1
		}
	}
	return out
}
