package sql

import "math/bits"

// A fingerprint is a polynomial hash of the SQL text an expression prints
// as (its String), computed without building the text. The binder matches
// the expressions of a select list against the group keys and aggregate
// calls by their text; rendering every sub-expression to compare it costs
// the square of the expression's length (a 4,000-term sum took seconds),
// while fingerprints of every node come from one walk: a node's is
// composed of its children's, which are remembered. Equal text has equal
// fingerprints; a match is confirmed on the text itself.

const (
	fpMod  = 1<<61 - 1
	fpBase = 1_000_003
)

// fpState is the hash of a text, B^len(text) and its length and first
// byte, so that two of them compose as the concatenation of their texts.
type fpState struct {
	h, pw uint64
	n     int
	first byte
}

func emptyFP() fpState { return fpState{pw: 1} }

func fpMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	// a, b < 2^61: the product is < 2^122; fold it modulo 2^61-1.
	r := (hi<<3 | lo>>61) + lo&fpMod
	for r >= fpMod {
		r -= fpMod
	}
	return r
}

func fpAdd(a, b uint64) uint64 {
	r := a + b
	if r >= fpMod {
		r -= fpMod
	}
	return r
}

func (s *fpState) writeByte(c byte) {
	if s.n == 0 {
		s.first = c
	}
	s.h = fpAdd(fpMul(s.h, fpBase), uint64(c))
	s.pw = fpMul(s.pw, fpBase)
	s.n++
}

func (s *fpState) writeString(t string) {
	for i := 0; i < len(t); i++ {
		s.writeByte(t[i])
	}
}

// append adds the text x hashes after s's.
func (s *fpState) append(x fpState) {
	if x.n == 0 {
		return
	}
	if s.n == 0 {
		s.first = x.first
	}
	s.h = fpAdd(fpMul(s.h, x.pw), x.h)
	s.pw = fpMul(s.pw, x.pw)
	s.n += x.n
}

func fingerprintOf(text string) fpState {
	s := emptyFP()
	s.writeString(text)
	return s
}

// fingerprinter remembers the fingerprint of every expression node it
// has printed. The tree must not change while it is in use.
type fingerprinter struct {
	cur  fpState
	memo map[Expr]fpState
}

func newFingerprinter() *fingerprinter {
	return &fingerprinter{memo: map[Expr]fpState{}}
}

// node appends e's fingerprint, printing it with body the first time.
func (f *fingerprinter) node(e Expr, body func()) {
	x, ok := f.memo[e]
	if !ok {
		x = f.measure(body)
		f.memo[e] = x
	}
	f.cur.append(x)
}

// measure is the fingerprint of what print writes.
func (f *fingerprinter) measure(print func()) fpState {
	saved := f.cur
	f.cur = emptyFP()
	print()
	x := f.cur
	f.cur = saved
	return x
}

// of is the fingerprint of e.String().
func (f *fingerprinter) of(e Expr) fpState {
	p := printer{fp: f}
	return f.measure(func() { p.expr(e, precLowest) })
}
