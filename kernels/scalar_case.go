package kernels

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Case is the searched CASE WHEN conds[0] THEN results[0] ... ELSE els END
// (els nil: ELSE NULL). The binder rewrites the simple form CASE x WHEN v
// to x = v. The result type is the common type of the results and els
// (numbers widen, DECIMALs as Flink; an untyped NULL takes the others'
// type).
//
// Evaluation is vectorized under selection vectors: each WHEN runs only on
// the live rows no earlier WHEN has taken (a NULL condition does not take a
// row), and each THEN only on the rows that chose it, so
// CASE WHEN b <> 0 THEN a / b END never divides by zero.
func Case(conds, results []Expr, els Expr) (Expr, error) {
	if len(conds) == 0 || len(conds) != len(results) {
		return nil, fmt.Errorf("CASE: %d conditions and %d results", len(conds), len(results))
	}
	for k, c := range conds {
		if c == nil || results[k] == nil {
			return nil, fmt.Errorf("CASE: branch %d is nil", k+1)
		}
		if ck := scKindOf(c.Type()); ck != skBool && ck != skNull {
			return nil, fmt.Errorf("CASE: WHEN condition %d is %s, not BOOLEAN", k+1, SQLTypeName(c.Type()))
		}
	}
	all := append([]Expr(nil), results...)
	if els != nil {
		all = append(all, els)
	}
	t, ok := scCommonTypes(all)
	if !ok {
		names := make([]string, len(all))
		for i, a := range all {
			names[i] = SQLTypeName(a.Type())
		}
		return nil, fmt.Errorf("CASE: results have no common type (%s)", strings.Join(names, ", "))
	}
	if scKindOf(t) == skNull {
		return nil, fmt.Errorf("CASE: cannot infer the result type: every result is NULL")
	}
	e := &caseExpr{typ: t, kind: scKindOf(t)}
	end := false
	for k := range conds {
		r, err := scCoerceTo(results[k], t)
		if err != nil {
			return nil, err
		}
		if lit, ok := scIsLiteral(conds[k]); ok {
			if lit.null || !lit.b {
				continue // never taken
			}
			els, end = r, true // WHEN TRUE takes every remaining row
			break
		}
		e.conds = append(e.conds, conds[k])
		e.results = append(e.results, r)
	}
	if els == nil {
		els = mustLit(nil, t)
	} else if !end {
		var err error
		if els, err = scCoerceTo(els, t); err != nil {
			return nil, err
		}
	}
	if len(e.conds) == 0 {
		return els, nil
	}
	e.results = append(e.results, els)
	allLit := true
	for _, x := range append(append([]Expr(nil), e.conds...), e.results...) {
		if _, ok := scIsLiteral(x); !ok {
			allLit = false
		}
	}
	if allLit {
		return exprFold(e), nil
	}
	return e, nil
}

// caseExpr: results[len(conds)] is the ELSE.
type caseExpr struct {
	typ     arrow.DataType
	kind    scKind
	conds   []Expr
	results []Expr
}

func (e *caseExpr) Type() arrow.DataType { return e.typ }

func (e *caseExpr) String() string {
	var sb strings.Builder
	sb.WriteString("CASE")
	for k, c := range e.conds {
		sb.WriteString(" WHEN " + c.String() + " THEN " + e.results[k].String())
	}
	sb.WriteString(" ELSE " + e.results[len(e.conds)].String() + " END")
	return sb.String()
}

func (e *caseExpr) exprMayFail() bool {
	for _, x := range e.conds {
		if exprMayFail(x) {
			return true
		}
	}
	for _, x := range e.results {
		if exprMayFail(x) {
			return true
		}
	}
	return false
}

// Eval decides rows with bitmaps: undecided starts as the live rows; each
// WHEN's TRUE rows (value AND valid) among them choose its THEN. A WHEN or
// THEN that may fail, or that concerns under a quarter of the live rows, is
// evaluated under a selection of exactly its rows; otherwise it runs over
// the batch's live rows (the extra rows cost less than building a
// selection, and their values are never used).
func (e *caseExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, e.typ), nil
	}
	nb, nw := len(e.conds), scWords(n)
	words := make([]uint64, nw*(nb+2))
	// chosen[k]: the rows that take result k (k = nb: ELSE).
	chosen := make([][]uint64, nb+1)
	for k := range chosen {
		chosen[k] = words[k*nw : (k+1)*nw]
	}
	undecided := words[(nb+1)*nw:]
	if b.Sel == nil {
		for w := range undecided {
			undecided[w] = ^uint64(0)
		}
		if rem := n % 64; rem != 0 {
			undecided[nw-1] = 1<<uint(rem) - 1
		}
	} else {
		for _, i := range b.Sel {
			undecided[i>>6] |= 1 << (uint(i) & 63)
		}
	}
	batchFor := func(x Expr, rows []uint64) *vector.Batch {
		cnt := 0
		for _, w := range rows {
			cnt += bits.OnesCount64(w)
		}
		if exprMayFail(x) || cnt*4 < b.Len() {
			return scSubBatch(b, scBitsToSel(rows, cnt))
		}
		return b
	}
	for k, cond := range e.conds {
		any := uint64(0)
		for _, w := range undecided {
			any |= w
		}
		if any == 0 {
			break
		}
		ca, err := cond.Eval(batchFor(cond, undecided), mem)
		if err != nil {
			return nil, err
		}
		if ca.DataType().ID() != arrow.NULL {
			x := scBitmapBytes(ca, 1)
			var valid []byte
			if ca.NullN() > 0 {
				valid = scBitmapBytes(ca, 0)
			}
			for w := range undecided {
				t := scLoadWord(x, w)
				if valid != nil {
					t &= scLoadWord(valid, w)
				}
				t &= undecided[w]
				chosen[k][w] = t
				undecided[w] &^= t
			}
		}
		ca.Release()
	}
	copy(chosen[nb], undecided)
	arrs := make([]arrow.Array, nb+1)
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	allValid := true // every live row gets a non-NULL value
	for k, rows := range chosen {
		any := uint64(0)
		for _, w := range rows {
			any |= w
		}
		if any == 0 {
			continue
		}
		if lit, ok := scIsLiteral(e.results[k]); ok {
			allValid = allValid && !lit.null
			continue
		}
		a, err := e.results[k].Eval(batchFor(e.results[k], rows), mem)
		if err != nil {
			return nil, err
		}
		arrs[k] = a
		allValid = allValid && a.NullN() == 0
	}
	g := caseGather{e: e, n: n, mem: mem, chosen: chosen, arrs: arrs, allValid: allValid}
	switch e.kind {
	case skInt8:
		return caseGatherFixed[int8](&g), nil
	case skInt16:
		return caseGatherFixed[int16](&g), nil
	case skInt32:
		return caseGatherFixed[int32](&g), nil
	case skInt64, skTimestamp:
		return caseGatherFixed[int64](&g), nil
	case skFloat32:
		return caseGatherFixed[float32](&g), nil
	case skFloat64:
		return caseGatherFixed[float64](&g), nil
	case skDecimal:
		return caseGatherFixed[scDec](&g), nil
	case skBool:
		return g.bools(), nil
	}
	return g.strings(), nil
}

// scBitsToSel lists the set bits of a bitmap (cnt of them), ascending.
func scBitsToSel(words []uint64, cnt int) []int32 {
	out := make([]int32, 0, cnt)
	for w, v := range words {
		base := int32(w * 64)
		for ; v != 0; v &= v - 1 {
			out = append(out, base+int32(bits.TrailingZeros64(v)))
		}
	}
	return out
}

// caseGather assembles the result from the branches' columns.
type caseGather struct {
	e        *caseExpr
	n        int
	mem      memory.Allocator
	chosen   [][]uint64
	arrs     []arrow.Array
	allValid bool
}

// validity is the result's validity: nil when every live row gets a value
// (rows outside the selection are unspecified), else per word the OR over
// branches of (chosen AND the branch's validity).
func (g *caseGather) validity() (*memory.Buffer, int) {
	if g.allValid {
		return nil, 0
	}
	buf, out := scAllocBitmap(g.mem, g.n)
	clear(out)
	for k, rows := range g.chosen {
		var v []byte
		switch a := g.arrs[k]; {
		case a != nil && a.DataType().ID() == arrow.NULL:
			continue
		case a != nil && a.NullN() > 0:
			v = scBitmapBytes(a, 0)
		case a == nil:
			if lit, ok := scIsLiteral(g.e.results[k]); ok && lit.null {
				continue
			}
		}
		for w, m := range rows {
			if m == 0 {
				continue
			}
			if v != nil {
				m &= scLoadWord(v, w)
			}
			scStoreWord(out, w, scLoadWord(out, w)|m)
		}
	}
	return buf, g.n - bitutil.CountSetBits(out, 0, g.n)
}

func caseGatherFixed[T scFixed](g *caseGather) arrow.Array {
	buf, o := scAllocValues[T](g.mem, g.n)
	for k, rows := range g.chosen {
		var src []T
		var lit T
		if a := g.arrs[k]; a != nil {
			src = scValues[T](a)
		} else if l, ok := scIsLiteral(g.e.results[k]); ok && !l.null {
			lit = scLitFixed[T](l)
		} else {
			continue // a NULL literal, or no row chose it
		}
		for w, m := range rows {
			if m == 0 {
				continue
			}
			base := w * 64
			if m == ^uint64(0) {
				if src != nil {
					copy(o[base:base+64], src[base:base+64])
				} else {
					for i := base; i < base+64; i++ {
						o[i] = lit
					}
				}
				continue
			}
			for ; m != 0; m &= m - 1 {
				i := base + bits.TrailingZeros64(m)
				if src != nil {
					o[i] = src[i]
				} else {
					o[i] = lit
				}
			}
		}
	}
	vbuf, nulls := g.validity()
	return scMakeArray(g.e.typ, g.n, vbuf, nulls, buf)
}

func (g *caseGather) bools() arrow.Array {
	buf, out := scAllocBitmap(g.mem, g.n)
	clear(out)
	for k, rows := range g.chosen {
		var x []byte
		var lit uint64
		if a := g.arrs[k]; a != nil {
			if a.DataType().ID() == arrow.NULL {
				continue
			}
			x = scBitmapBytes(a, 1)
		} else if l, ok := scIsLiteral(g.e.results[k]); !ok || l.null {
			continue
		} else if l.b {
			lit = ^uint64(0)
		}
		for w, m := range rows {
			v := lit
			if x != nil {
				v = scLoadWord(x, w)
			}
			scStoreWord(out, w, scLoadWord(out, w)|m&v)
		}
	}
	vbuf, nulls := g.validity()
	return scMakeArray(g.e.typ, g.n, vbuf, nulls, buf)
}

func (g *caseGather) strings() arrow.Array {
	// src[i]: the branch row i comes from, -1 if none (not live).
	src := make([]int32, g.n)
	for i := range src {
		src[i] = -1
	}
	strs := make([]scStrArg, len(g.arrs))
	est := 0
	for k, rows := range g.chosen {
		if a := g.arrs[k]; a != nil {
			if a.DataType().ID() == arrow.NULL {
				continue
			}
			strs[k].offs, strs[k].data = scStrings(a)
			est += len(strs[k].data)
		} else {
			lit, ok := scIsLiteral(g.e.results[k])
			if !ok || lit.null {
				continue
			}
			strs[k] = scStrArg{lit: []byte(lit.s), isLit: true}
			est += len(lit.s) * 64
		}
		for w, m := range rows {
			for ; m != 0; m &= m - 1 {
				src[w*64+bits.TrailingZeros64(m)] = int32(k)
			}
		}
	}
	w := newScStrWriter(g.mem, g.n, est)
	for i, k := range src {
		if k >= 0 {
			w.appendBytes(strs[k].at(i))
		}
		w.endRow(i)
	}
	vbuf, nulls := g.validity()
	return w.finish(g.e.typ, vbuf, nulls)
}

// ---------------------------------------------------------------------------
// NULLIF, BETWEEN

// bindNullif is nullif(a, b): NULL where a = b, else a (a's type; the two
// compare in their common type).
func bindNullif(args []Expr) (Expr, error) {
	a, b := args[0], args[1]
	if scIsNullLiteral(a) {
		switch {
		case scKindOf(a.Type()) != skNull:
			return a, nil
		case scKindOf(b.Type()) == skNull:
			return nil, scSigError("nullif", args)
		}
		return Literal(nil, b.Type())
	}
	eq, err := bindCompare("equal", scEq)([]Expr{a, b})
	if err != nil {
		return nil, scSigError("nullif", args)
	}
	if l, ok := scIsLiteral(eq); ok && (l.null || !l.b) {
		return a, nil
	}
	e := &nullifExpr{a: a, b: b, eq: eq}
	if _, ok := scIsLiteral(a); ok {
		if _, ok := scIsLiteral(b); ok {
			return exprFold(e), nil
		}
	}
	return e, nil
}

type nullifExpr struct {
	a, b Expr
	eq   Expr // a = b
}

func (e *nullifExpr) Type() arrow.DataType { return e.a.Type() }
func (e *nullifExpr) String() string       { return "nullif(" + e.a.String() + ", " + e.b.String() + ")" }
func (e *nullifExpr) exprMayFail() bool    { return exprMayFail(e.eq) }

func (e *nullifExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, e.Type()), nil
	}
	a, err := e.a.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	eq, err := e.eq.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer eq.Release()
	if a.DataType().ID() == arrow.NULL {
		a.Retain()
		return a, nil
	}
	// a's buffers under a new validity: valid(a) and not (a = b), at a's
	// offset.
	d := a.Data()
	off := d.Offset()
	vbuf, vbits := scAllocBitmap(mem, off+n)
	var av, x, ev []byte
	if a.NullN() > 0 {
		av = d.Buffers()[0].Bytes()
	}
	if eq.DataType().ID() != arrow.NULL {
		x = scBitmapBytes(eq, 1)
		if eq.NullN() > 0 {
			ev = scBitmapBytes(eq, 0)
		}
	}
	nulls := 0
	for i := range n {
		ok := av == nil || bitutil.BitIsSet(av, off+i)
		if ok && x != nil && bitutil.BitIsSet(x, i) && (ev == nil || bitutil.BitIsSet(ev, i)) {
			ok = false
		}
		bitutil.SetBitTo(vbits, off+i, ok)
		if !ok {
			nulls++
		}
	}
	bufs := append([]*memory.Buffer{vbuf}, d.Buffers()[1:]...)
	nd := arrayData(e.Type(), n, bufs, nulls, off)
	vbuf.Release()
	return nd, nil
}

// bindBetween is between(x, lo, hi): x >= lo AND x <= hi (inclusive, three-valued).
func bindBetween(args []Expr) (Expr, error) {
	ge, err := bindCompare("gte", scGte)([]Expr{args[0], args[1]})
	if err != nil {
		return nil, scSigError("between", args)
	}
	le, err := bindCompare("lte", scLte)([]Expr{args[0], args[2]})
	if err != nil {
		return nil, scSigError("between", args)
	}
	return bindLogic("and", true)([]Expr{ge, le})
}
