package kernels

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

func bindCoalesce(args []Expr) (Expr, error) {
	k := skNull
	for _, a := range args {
		var ok bool
		if k, ok = scCommonKind(k, scKindOf(a.Type())); !ok {
			return nil, scSigError("coalesce", args)
		}
	}
	if k == skNull {
		return nil, scSigError("coalesce", args)
	}
	t := scTypeFor(k, args...)
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
	lit  *literal // the last operand, if it is a literal
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
	case skInt8:
		return scGatherNum[int8](mem, e, n, arrs, src, litIdx, vbuf, nulls), nil
	case skInt16:
		return scGatherNum[int16](mem, e, n, arrs, src, litIdx, vbuf, nulls), nil
	case skInt32:
		return scGatherNum[int32](mem, e, n, arrs, src, litIdx, vbuf, nulls), nil
	case skInt64, skTimestamp:
		return scGatherNum[int64](mem, e, n, arrs, src, litIdx, vbuf, nulls), nil
	case skFloat32:
		return scGatherNum[float32](mem, e, n, arrs, src, litIdx, vbuf, nulls), nil
	case skFloat64:
		return scGatherNum[float64](mem, e, n, arrs, src, litIdx, vbuf, nulls), nil
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

func scGatherNum[T scNum](mem memory.Allocator, e *coalesceExpr, n int, arrs []arrow.Array, src []int32, litIdx int32, vbuf *memory.Buffer, nulls int) arrow.Array {
	vals := make([][]T, len(arrs))
	for k, a := range arrs {
		vals[k] = scValues[T](a)
	}
	var lit T
	if e.lit != nil {
		lit = scLitNum[T](e.lit)
	}
	buf, o := scAllocValues[T](mem, n)
	for i, s := range src {
		switch {
		case s == litIdx:
			o[i] = lit
		case s >= 0:
			o[i] = vals[s][i]
		default:
			o[i] = 0
		}
	}
	return scMakeArray(e.typ, n, vbuf, nulls, buf)
}
