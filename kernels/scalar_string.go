package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// String functions on VARCHAR (Arrow utf8). Characters are Unicode code
// points, which is Flink's (Java's UTF-16) notion for text in the Basic
// Multilingual Plane. Results are written straight into one value buffer
// and one offset buffer per batch; rows are visited once, in order.

var scVarchar = arrow.BinaryTypes.String

// scStrArgs checks that every operand is VARCHAR (or the untyped NULL),
// except those at the positions in ints, which must be integers; integer
// operands are converted to BIGINT.
func scStrArgs(name string, args []Expr, ints ...int) ([]Expr, error) {
	out := make([]Expr, len(args))
	for k, a := range args {
		isInt := false
		for _, i := range ints {
			isInt = isInt || i == k
		}
		ak := scKindOf(a.Type())
		switch {
		case isInt && (ak.isInt() || ak == skNull):
			c, err := scCoerce(a, skInt64, scTypeOf(skInt64))
			if err != nil {
				return nil, err
			}
			out[k] = c
		case !isInt && (ak == skString || ak == skNull):
			out[k] = a
		default:
			return nil, scSigError(name, args)
		}
	}
	return out, nil
}

// scStrLoop runs f for every row to compute, in order, closing the rows in
// between (and after) empty, and returns the finished column.
func scStrLoop(c *scCall, t arrow.DataType, est int, f func(w *scStrWriter, i int)) arrow.Array {
	w := newScStrWriter(c.mem, c.n, est)
	next := 0
	for _, i := range c.rows {
		next = w.fillTo(next, int(i))
		f(w, int(i))
		w.endRow(int(i))
		next++
	}
	w.fillTo(next, c.n)
	return c.strResult(t, w)
}

// ---------------------------------------------------------------------------
// UPPER, LOWER

var scASCIIUpper, scASCIILower = func() (u, l [128]byte) {
	for i := range u {
		u[i], l[i] = byte(i), byte(i)
		if i >= 'a' && i <= 'z' {
			u[i] = byte(i) - 32
		}
		if i >= 'A' && i <= 'Z' {
			l[i] = byte(i) + 32
		}
	}
	return
}()

func bindCaseMap(name string, upper bool) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		ops, err := scStrArgs(name, args)
		if err != nil {
			return nil, err
		}
		return scBindStrict(name, scVarchar, ops, false, func(c *scCall) (arrow.Array, error) {
			s := c.str(0)
			if !s.isLit && !scSparse(c.sel, c.n) {
				if out := scCaseMapASCII(c, &s, upper); out != nil {
					return out, nil
				}
			}
			table := &scASCIILower
			if upper {
				table = &scASCIIUpper
			}
			return scStrLoop(c, scVarchar, s.size(c.n), func(w *scStrWriter, i int) {
				scAppendCaseMapped(w, s.at(i), table, upper)
			}), nil
		})
	}
}

// scAppendCaseMapped appends s with every character mapped to upper or
// lower case (Unicode simple case mapping; ASCII through a table).
func scAppendCaseMapped(w *scStrWriter, s []byte, table *[128]byte, upper bool) {
	// A non-ASCII character is at least 2 bytes and maps to at most 4, so
	// 2*len(s) bytes always suffice.
	k := 2*len(s) + utf8.UTFMax
	out := w.reserve(k)[:k]
	j := 0
	for k := 0; k < len(s); {
		c := s[k]
		if c < utf8.RuneSelf {
			out[j] = table[c]
			j++
			k++
			continue
		}
		r, sz := utf8.DecodeRune(s[k:])
		if upper {
			r = unicode.ToUpper(r)
		} else {
			r = unicode.ToLower(r)
		}
		j += utf8.EncodeRune(out[j:], r)
		k += sz
	}
	w.n += j
}

// scCaseMapASCII maps a whole column at once when its bytes are all ASCII:
// the offsets are the input's and the bytes are mapped eight at a time.
// Rows outside the selection and NULL rows are mapped too (their content
// is unspecified). nil if some byte is not ASCII.
func scCaseMapASCII(c *scCall, s *scStrArg, upper bool) arrow.Array {
	lo, hi := s.offs[0], s.offs[c.n]
	src := s.data[lo:hi]
	var acc uint64
	k := 0
	for ; k+8 <= len(src); k += 8 {
		acc |= binary.LittleEndian.Uint64(src[k:])
	}
	for ; k < len(src); k++ {
		acc |= uint64(src[k])
	}
	if acc&0x8080808080808080 != 0 {
		return nil
	}
	offBuf, offs := scAllocValues[int32](c.mem, c.n+1)
	for i, o := range s.offs[:c.n+1] {
		offs[i] = o - lo
	}
	dataBuf := memory.NewResizableBuffer(c.mem)
	dataBuf.Resize(len(src))
	dst := dataBuf.Bytes()
	// Per byte: set the high bit where the byte is >= the first letter and
	// not > the last, then flip bit 5 (the ASCII case bit) there.
	const ones = 0x0101010101010101
	first, last := uint64('A'), uint64('Z')
	if upper {
		first, last = 'a', 'z'
	}
	for k = 0; k+8 <= len(src); k += 8 {
		x := binary.LittleEndian.Uint64(src[k:])
		m := (x + ones*(0x80-first)) &^ (x + ones*(0x80-last-1)) & (ones * 0x80)
		binary.LittleEndian.PutUint64(dst[k:], x^m>>2)
	}
	table := &scASCIILower
	if upper {
		table = &scASCIIUpper
	}
	for ; k < len(src); k++ {
		dst[k] = table[src[k]]
	}
	return c.result(scVarchar, offBuf, dataBuf)
}

// ---------------------------------------------------------------------------
// CHAR_LENGTH

// scRuneCount counts code points: every byte that is not a UTF-8
// continuation byte starts one.
func scRuneCount(s []byte) int {
	n := 0
	for _, c := range s {
		n += int(scBit(c&0xC0 != 0x80))
	}
	return n
}

func bindCharLength(args []Expr) (Expr, error) {
	ops, err := scStrArgs("char_length", args)
	if err != nil {
		return nil, err
	}
	t := scTypeOf(skInt32)
	return scBindStrict("char_length", t, ops, false, func(c *scCall) (arrow.Array, error) {
		s := c.str(0)
		buf, o := scAllocValues[int32](c.mem, c.n)
		for _, i := range c.rows {
			o[i] = int32(scRuneCount(s.at(int(i))))
		}
		return c.result(t, buf), nil
	})
}

// ---------------------------------------------------------------------------
// SUBSTRING

// scRuneOffset is the byte offset of the k-th code point of s (len(s) if
// s has fewer).
func scRuneOffset(s []byte, k int64) int {
	p := 0
	for ; k > 0 && p < len(s); k-- {
		if s[p] < utf8.RuneSelf {
			p++
			continue
		}
		_, sz := utf8.DecodeRune(s[p:])
		p += sz
	}
	return p
}

// scSubstring is Flink's SUBSTRING(s FROM pos [FOR length]): pos counts from
// 1; a negative pos counts from the end (-1 is the last character); 0 is the
// first character. ok false (NULL) for a negative length.
func scSubstring(s []byte, pos, length int64, hasLen bool) ([]byte, bool) {
	if hasLen && length < 0 {
		return nil, false
	}
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = int64(scRuneCount(s)) + pos
		if start < 0 {
			return nil, true
		}
	}
	b1 := scRuneOffset(s, start)
	if !hasLen {
		return s[b1:], true
	}
	return s[b1 : b1+scRuneOffset(s[b1:], length)], true
}

func bindSubstring(args []Expr) (Expr, error) {
	ops, err := scStrArgs("substring", args, 1, 2)
	if err != nil {
		return nil, err
	}
	hasLen := len(ops) == 3
	return scBindStrict("substring", scVarchar, ops, false, func(c *scCall) (arrow.Array, error) {
		s, pos := c.str(0), scCallNum[int64](c, 1)
		var ln scNumArg[int64]
		if hasLen {
			ln = scCallNum[int64](c, 2)
		} else {
			ln = scNumArg[int64]{lit: math.MaxInt64, isLit: true}
		}
		return scStrLoop(c, scVarchar, s.size(c.n), func(w *scStrWriter, i int) {
			sub, ok := scSubstring(s.at(i), pos.at(i), ln.at(i), hasLen)
			if !ok {
				c.setNull(i)
				return
			}
			w.appendBytes(sub)
		}), nil
	})
}

// ---------------------------------------------------------------------------
// TRIM, LTRIM, RTRIM

// scTrimSet is the set of characters to remove.
type scTrimSet struct {
	ascii [128]bool
	other []rune
}

func newScTrimSet(chars []byte) *scTrimSet {
	t := &scTrimSet{}
	for _, r := range string(chars) {
		if r < utf8.RuneSelf {
			t.ascii[r] = true
		} else {
			t.other = append(t.other, r)
		}
	}
	return t
}

func (t *scTrimSet) has(r rune) bool {
	if r < utf8.RuneSelf {
		return t.ascii[r]
	}
	for _, o := range t.other {
		if o == r {
			return true
		}
	}
	return false
}

func (t *scTrimSet) trim(s []byte, left, right bool) []byte {
	if left {
		for len(s) > 0 {
			r, sz := rune(s[0]), 1
			if r >= utf8.RuneSelf {
				r, sz = utf8.DecodeRune(s)
			}
			if !t.has(r) {
				break
			}
			s = s[sz:]
		}
	}
	if right {
		for len(s) > 0 {
			r, sz := rune(s[len(s)-1]), 1
			if r >= utf8.RuneSelf {
				r, sz = utf8.DecodeLastRune(s)
			}
			if !t.has(r) {
				break
			}
			s = s[:len(s)-sz]
		}
	}
	return s
}

var scSpaceSet = newScTrimSet([]byte(" "))

// bindTrim is trim/ltrim/rtrim(s [, characters]): remove from both ends,
// the start or the end every character found in characters (default a
// space).
func bindTrim(name string, left, right bool) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		ops, err := scStrArgs(name, args)
		if err != nil {
			return nil, err
		}
		set := scSpaceSet
		if len(ops) == 2 {
			set = nil
			if l, ok := scIsLiteral(ops[1]); ok && !l.null {
				set = newScTrimSet([]byte(l.s))
			}
		}
		return scBindStrict(name, scVarchar, ops, false, func(c *scCall) (arrow.Array, error) {
			s := c.str(0)
			var chars scStrArg
			if set == nil {
				chars = c.str(1)
			}
			var last []byte
			cur := set
			return scStrLoop(c, scVarchar, s.size(c.n), func(w *scStrWriter, i int) {
				if set == nil {
					if ch := chars.at(i); cur == nil || string(ch) != string(last) {
						cur, last = newScTrimSet(ch), ch
					}
				}
				w.appendBytes(cur.trim(s.at(i), left, right))
			}), nil
		})
	}
}

// ---------------------------------------------------------------------------
// CONCAT, ||

// bindConcat is concat(s1, ..., sn): NULL if any operand is NULL, as
// Flink's CONCAT and ||.
func bindConcat(args []Expr) (Expr, error) {
	ops, err := scStrArgs("concat", args)
	if err != nil {
		return nil, err
	}
	return scBindStrict("concat", scVarchar, ops, false, func(c *scCall) (arrow.Array, error) {
		parts := make([]scStrArg, len(ops))
		est := 0
		for k := range ops {
			parts[k] = c.str(k)
			est += parts[k].size(c.n)
		}
		return scStrLoop(c, scVarchar, est, func(w *scStrWriter, i int) {
			for k := range parts {
				w.appendBytes(parts[k].at(i))
			}
		}), nil
	})
}

// ---------------------------------------------------------------------------
// REPLACE

// bindReplace is replace(s, from, to): every occurrence of from, left to
// right, replaced; an empty from leaves s unchanged.
func bindReplace(args []Expr) (Expr, error) {
	ops, err := scStrArgs("replace", args)
	if err != nil {
		return nil, err
	}
	return scBindStrict("replace", scVarchar, ops, false, func(c *scCall) (arrow.Array, error) {
		s, from, to := c.str(0), c.str(1), c.str(2)
		return scStrLoop(c, scVarchar, s.size(c.n), func(w *scStrWriter, i int) {
			x, f, t := s.at(i), from.at(i), to.at(i)
			if len(f) == 0 {
				w.appendBytes(x)
				return
			}
			for {
				k := bytes.Index(x, f)
				if k < 0 {
					w.appendBytes(x)
					return
				}
				w.appendBytes(x[:k])
				w.appendBytes(t)
				x = x[k+len(f):]
			}
		}), nil
	})
}

// ---------------------------------------------------------------------------
// STRPOS (POSITION(sub IN s))

// bindStrpos is strpos(s, sub) → INT: the 1-based character position of the
// first sub in s, 0 if there is none, 1 for an empty sub.
func bindStrpos(args []Expr) (Expr, error) {
	ops, err := scStrArgs("strpos", args)
	if err != nil {
		return nil, err
	}
	t := scTypeOf(skInt32)
	return scBindStrict("strpos", t, ops, false, func(c *scCall) (arrow.Array, error) {
		s, sub := c.str(0), c.str(1)
		buf, o := scAllocValues[int32](c.mem, c.n)
		for _, i := range c.rows {
			x := s.at(int(i))
			k := bytes.Index(x, sub.at(int(i)))
			if k < 0 {
				o[i] = 0
				continue
			}
			o[i] = int32(scRuneCount(x[:k]) + 1)
		}
		return c.result(t, buf), nil
	})
}

// ---------------------------------------------------------------------------
// SPLIT_PART

// scSplitPart is PostgreSQL's split_part: field n (1-based; negative counts
// from the end) of s split at delim; "" when there is no such field. An
// empty delim makes s the only field.
func scSplitPart(s, delim []byte, n int64) []byte {
	if len(delim) == 0 {
		if n == 1 || n == -1 {
			return s
		}
		return nil
	}
	if n > 0 {
		for ; n > 1; n-- {
			k := bytes.Index(s, delim)
			if k < 0 {
				return nil
			}
			s = s[k+len(delim):]
		}
		if k := bytes.Index(s, delim); k >= 0 {
			return s[:k]
		}
		return s
	}
	for ; n < -1; n++ {
		k := bytes.LastIndex(s, delim)
		if k < 0 {
			return nil
		}
		s = s[:k]
	}
	if k := bytes.LastIndex(s, delim); k >= 0 {
		return s[k+len(delim):]
	}
	return s
}

func bindSplitPart(args []Expr) (Expr, error) {
	ops, err := scStrArgs("split_part", args, 2)
	if err != nil {
		return nil, err
	}
	zeroErr := fmt.Errorf("function split_part: field position must not be zero")
	fails := true
	if l, ok := scIsLiteral(ops[2]); ok && !l.null {
		if l.i == 0 {
			return nil, zeroErr
		}
		fails = false
	}
	return scBindStrict("split_part", scVarchar, ops, fails, func(c *scCall) (arrow.Array, error) {
		s, delim, n := c.str(0), c.str(1), scCallNum[int64](c, 2)
		if !n.isLit {
			for _, i := range c.rows {
				if n.at(int(i)) == 0 {
					return nil, zeroErr
				}
			}
		}
		return scStrLoop(c, scVarchar, s.size(c.n), func(w *scStrWriter, i int) {
			w.appendBytes(scSplitPart(s.at(i), delim.at(i), n.at(i)))
		}), nil
	})
}
