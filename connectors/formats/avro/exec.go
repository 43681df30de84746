package avro

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// exec runs a program over one record into row d.n.
func (d *Decoder) exec(ops []op, b []byte) *RecordError {
	n := d.n
	i := 0
	for k := range ops {
		o := &ops[k]
	again:
		col := o.col
		switch o.code {
		case opUnion:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			if uint64(v) >= uint64(len(o.alts)) {
				return fail(o, i, fmt.Sprintf("union branch %d out of range (%d branches)", v, len(o.alts)))
			}
			i = j
			o = &o.alts[v]
			goto again

		case opNull:
			if !col.nullable {
				return fail(o, i, "null for a NOT NULL column")
			}
			d.setNull(col, n)

		case opLong:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			col.V8[n] = uint64(v)
			col.SetValid(n)
			i = j

		case opString:
			l, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			if l < 0 {
				return fail(o, i, fmt.Sprintf("negative length %d", l))
			}
			if l > int64(len(b)-j) {
				return fail(o, i, reasonTruncated)
			}
			s := b[j : j+int(l)]
			if !utf8.Valid(s) {
				return fail(o, j, "invalid UTF-8 in a string")
			}
			if start := int(col.Off[n]); l <= 16 && len(b)-j >= 16 && len(col.Dat)-start >= 16 {
				// Short string: two word moves instead of a memmove
				// call. The bytes past its end land in spare capacity,
				// which the next value overwrites.
				binary.LittleEndian.PutUint64(col.Dat[start:], binary.LittleEndian.Uint64(b[j:]))
				binary.LittleEndian.PutUint64(col.Dat[start+8:], binary.LittleEndian.Uint64(b[j+8:]))
				col.Off[n+1] = int32(start + int(l))
			} else if !col.PutString(n, s) {
				return fail(o, j, "string data of the batch exceeds 2 GiB; flush more often")
			}
			col.SetValid(n)
			i = j + int(l)

		case opDouble:
			if len(b)-i < 8 {
				return fail(o, i, reasonTruncated)
			}
			col.V8[n] = binary.LittleEndian.Uint64(b[i:])
			col.SetValid(n)
			i += 8

		case opNarrow:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			if v < o.lo || v > o.hi {
				return fail(o, i, fmt.Sprintf("%d out of range for %s", v, col.Type))
			}
			switch col.Kind {
			case arrowcol.Int32, arrowcol.Date:
				col.V4[n] = uint32(v)
			case arrowcol.Int16:
				col.V2[n] = uint16(v)
			default:
				col.V1[n] = byte(v)
			}
			col.SetValid(n)
			i = j

		case opInt:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			if v != int64(int32(v)) {
				return fail(o, i, fmt.Sprintf("invalid int encoding (%d does not fit 32 bits)", v))
			}
			col.V8[n] = uint64(v)
			col.SetValid(n)
			i = j

		case opTsMul:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			if v > math.MaxInt64/o.mul || v < math.MinInt64/o.mul {
				return fail(o, i, fmt.Sprintf("%d out of range for %s", v, col.Type))
			}
			col.V8[n] = uint64(v * o.mul)
			col.SetValid(n)
			i = j

		case opTsDiv:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			q := v / o.mul
			if v%o.mul < 0 {
				q--
			}
			col.V8[n] = uint64(q)
			col.SetValid(n)
			i = j

		case opFloat:
			if len(b)-i < 4 {
				return fail(o, i, reasonTruncated)
			}
			col.V4[n] = binary.LittleEndian.Uint32(b[i:])
			col.SetValid(n)
			i += 4

		case opFloatF64:
			if len(b)-i < 4 {
				return fail(o, i, reasonTruncated)
			}
			f := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
			col.V8[n] = math.Float64bits(float64(f))
			col.SetValid(n)
			i += 4

		case opLongF64:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			col.V8[n] = math.Float64bits(float64(v))
			col.SetValid(n)
			i = j

		case opLongF32:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			col.V4[n] = math.Float32bits(float32(v))
			col.SetValid(n)
			i = j

		case opEnum:
			v, j := readLong(b, i)
			if j < 0 {
				return fail(o, i, varintReason(j))
			}
			if v < 0 || v >= int64(len(o.symOff)-1) {
				return fail(o, i, fmt.Sprintf("enum index %d out of range (%d symbols)", v, len(o.symOff)-1))
			}
			if !col.PutString(n, o.syms[o.symOff[v]:o.symOff[v+1]]) {
				return fail(o, i, "string data of the batch exceeds 2 GiB; flush more often")
			}
			col.SetValid(n)
			i = j

		case opBool:
			if i >= len(b) {
				return fail(o, i, reasonTruncated)
			}
			switch b[i] {
			case 0:
				bitutil.ClearBit(col.V1, n)
			case 1:
				bitutil.SetBit(col.V1, n)
			default:
				return fail(o, i, fmt.Sprintf("invalid boolean byte %#02x", b[i]))
			}
			col.SetValid(n)
			i++

		case opDecBytes, opDecFixed:
			start := i
			var raw []byte
			if o.code == opDecFixed {
				if len(b)-i < o.size {
					return fail(o, i, reasonTruncated)
				}
				raw = b[i : i+o.size]
				i += o.size
			} else {
				l, j := readLong(b, i)
				if j < 0 {
					return fail(o, i, varintReason(j))
				}
				if l < 0 {
					return fail(o, i, fmt.Sprintf("negative length %d", l))
				}
				if l > int64(len(b)-j) {
					return fail(o, i, reasonTruncated)
				}
				raw = b[j : j+int(l)]
				i = j + int(l)
			}
			v, ok := decimalFromBytes(raw)
			if ok && o.scaleUp {
				ok = v.Abs().LessEqual(o.scaleLimit)
				v = v.Mul(o.scaleMul)
			}
			if !ok || !v.FitsInPrecision(col.prec) {
				return fail(o, start, fmt.Sprintf("decimal out of range for %s", col.Type))
			}
			col.PutDecimal(n, v)
			col.SetValid(n)

		case opSkip:
			j, r := skip(o.skip, b, i, 0)
			if r != "" {
				return fail(o, j, r)
			}
			i = j
		}
	}
	if i != len(b) {
		return &RecordError{Offset: i, Reason: fmt.Sprintf("%d trailing bytes after the record", len(b)-i)}
	}
	return nil
}

func fail(o *op, i int, reason string) *RecordError {
	return &RecordError{Field: o.name, Offset: i, Reason: reason}
}

// decimalFromBytes reads a big-endian two's-complement unscaled value;
// false if it does not fit 128 bits. Empty bytes are zero.
func decimalFromBytes(raw []byte) (decimal128.Num, bool) {
	if len(raw) == 0 {
		return decimal128.Num{}, true
	}
	neg := raw[0]&0x80 != 0
	if len(raw) > 16 {
		ext := byte(0)
		if neg {
			ext = 0xff
		}
		for _, c := range raw[:len(raw)-16] {
			if c != ext {
				return decimal128.Num{}, false
			}
		}
		raw = raw[len(raw)-16:]
		if (raw[0]&0x80 != 0) != neg {
			return decimal128.Num{}, false
		}
	}
	var buf [16]byte
	if neg {
		buf = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	copy(buf[16-len(raw):], raw)
	hi := binary.BigEndian.Uint64(buf[:8])
	lo := binary.BigEndian.Uint64(buf[8:])
	return decimal128.New(int64(hi), lo), true
}
