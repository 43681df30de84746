package protobuf

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
	"github.com/clink-dev/clink/vector"
)

// encColumn is one column's writer. Its typed view of the column's array
// is set up once per batch, so that the row loop only switches on small
// integers.
type encColumn struct {
	col      int // schema column
	field    string
	tag      []byte // the field's tag, encoded
	kind     arrowcol.Kind
	conv     conv
	wrapped  bool
	presence bool // written even when zero
	scale    int32
	enumNum  map[string]int32

	arrowcol.Values
}

// Encoder writes rows as serialized messages of one message type. It is
// not safe for concurrent use.
type Encoder struct {
	schema *arrow.Schema
	cols   []encColumn // in field-number order
	bound  arrow.RecordBatch
	err    error
}

// NewEncoder writes rows of schema as messages of type md, each column
// into the field it names (as CheckSchema matches them). It refuses a
// column whose values a field cannot hold: an integer column into a
// narrower or an unsigned integer field, DOUBLE into float.
func NewEncoder(schema *arrow.Schema, md protoreflect.MessageDescriptor) (*Encoder, error) {
	bs, err := bind(schema, md)
	if err != nil {
		return nil, err
	}
	e := &Encoder{schema: schema}
	for c := range bs {
		b := &bs[c]
		f := schema.Field(c)
		fd := b.field
		bad := func(why string) error {
			return fmt.Errorf("protobuf format: column %q: cannot write %s into field %q (%s): %s", f.Name, f.Type, fd.Name(), fieldTypeName(fd), why)
		}
		switch {
		case b.conv.isUnsigned():
			return nil, bad("negative values have no encoding")
		case b.conv.isInt() && !b.conv.is64() && (b.kind == arrowcol.Int64 || b.kind == arrowcol.TimestampMs):
			return nil, bad("values may not fit 32 bits")
		case b.conv == cFloat && b.kind == arrowcol.Float64:
			return nil, bad("values would lose precision")
		}
		ec := encColumn{
			col:      c,
			field:    string(fd.Name()),
			tag:      protowire.AppendTag(nil, fd.Number(), b.wire()),
			kind:     b.kind,
			conv:     b.conv,
			wrapped:  b.wrapped,
			presence: fd.HasPresence(),
		}
		if b.kind == arrowcol.Decimal {
			ec.scale = f.Type.(*arrow.Decimal128Type).Scale
		}
		if b.conv == cEnum {
			ec.enumNum = map[string]int32{}
			vals := fd.Enum().Values()
			for i := 0; i < vals.Len(); i++ {
				ec.enumNum[string(vals.Get(i).Name())] = int32(vals.Get(i).Number())
			}
		}
		e.cols = append(e.cols, ec)
	}
	sort.SliceStable(e.cols, func(i, j int) bool {
		return bs[e.cols[i].col].field.Number() < bs[e.cols[j].col].field.Number()
	})
	return e, nil
}

// bind sets up the column writers for rec.
func (e *Encoder) bind(rec arrow.RecordBatch) {
	if e.bound == rec {
		return
	}
	e.bound = rec
	for k := range e.cols {
		ec := &e.cols[k]
		if arr := rec.Column(ec.col); !ec.Bind(arr) {
			panic(fmt.Sprintf("protobuf encoder: column %d is %T, not of the encoder's schema", ec.col, arr))
		}
	}
}

// AppendRow appends physical row i of rec, whose schema is the encoder's,
// as one serialized message (without framing or length prefix).
//
// Null values are left out of the message (a field without presence then
// reads as its default). Zero values of fields without presence are left
// out too, as proto.Marshal does. The one value that can fail to encode is
// a VARCHAR for an enum field that is neither a value's name nor a decimal
// number: AppendRow then returns dst unchanged and Err reports it.
func (e *Encoder) AppendRow(dst []byte, rec arrow.RecordBatch, i int) []byte {
	e.bind(rec)
	out, err := e.row(dst, i)
	if err != nil {
		e.err = err
		return dst
	}
	return out
}

// Err returns the first error of AppendRow since the last call of Err,
// and clears it.
func (e *Encoder) Err() error {
	err := e.err
	e.err = nil
	return err
}

// AppendBatch appends the live rows of b (all, or those of its selection
// vector) to dst, one serialized message each, and appends the end offset
// in dst of each message to ends. On an error (see AppendRow) it stops
// there: dst and ends hold the rows before it.
func (e *Encoder) AppendBatch(dst []byte, ends []int, b *vector.Batch) ([]byte, []int, error) {
	e.bind(b.Rec)
	defer func() { e.bound = nil }()
	var err error
	if b.Sel != nil {
		for _, i := range b.Sel {
			if dst, err = e.row(dst, int(i)); err != nil {
				return dst, ends, fmt.Errorf("row %d: %w", i, err)
			}
			ends = append(ends, len(dst))
		}
		return dst, ends, nil
	}
	for i, n := 0, int(b.Rec.NumRows()); i < n; i++ {
		if dst, err = e.row(dst, i); err != nil {
			return dst, ends, fmt.Errorf("row %d: %w", i, err)
		}
		ends = append(ends, len(dst))
	}
	return dst, ends, nil
}

// row appends row i of the bound batch; on error it returns dst as it was.
func (e *Encoder) row(dst []byte, i int) ([]byte, error) {
	start := len(dst)
	for k := range e.cols {
		c := &e.cols[k]
		if c.IsNull(i) {
			continue
		}
		var err error
		if dst, err = c.value(dst, i); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// value appends the field of row i.
func (c *encColumn) value(dst []byte, i int) ([]byte, error) {
	switch c.kind {
	case arrowcol.Int8, arrowcol.Int16, arrowcol.Int32, arrowcol.Date, arrowcol.Int64, arrowcol.TimestampMs:
		var v int64
		switch c.kind {
		case arrowcol.Int8:
			v = int64(c.I8[i])
		case arrowcol.Int16:
			v = int64(c.I16[i])
		case arrowcol.Int32, arrowcol.Date:
			v = int64(c.I32[i])
		default:
			v = c.I64[i]
		}
		if c.conv == cTimestamp {
			sec, ms := v/1000, v%1000
			if ms < 0 {
				sec, ms = sec-1, ms+1000
			}
			nanos := ms * 1_000_000
			n := 0
			if sec != 0 {
				n += 1 + protowire.SizeVarint(uint64(sec))
			}
			if nanos != 0 {
				n += 1 + protowire.SizeVarint(uint64(nanos))
			}
			dst = append(dst, c.tag...)
			dst = protowire.AppendVarint(dst, uint64(n))
			if sec != 0 {
				dst = append(dst, 1<<3|byte(protowire.VarintType))
				dst = protowire.AppendVarint(dst, uint64(sec))
			}
			if nanos != 0 {
				dst = append(dst, 2<<3|byte(protowire.VarintType))
				dst = protowire.AppendVarint(dst, uint64(nanos))
			}
			return dst, nil
		}
		if v == 0 && !c.presence && !c.wrapped {
			return dst, nil
		}
		dst = append(dst, c.tag...)
		if c.wrapped {
			if v == 0 {
				return append(dst, 0), nil
			}
			// Int32Value or Int64Value: a plain varint.
			dst = protowire.AppendVarint(dst, uint64(1+protowire.SizeVarint(uint64(v))))
			dst = append(dst, byte(1<<3|c.conv.wire()))
		}
		return appendInt(dst, c.conv, v), nil

	case arrowcol.Float32, arrowcol.Float64:
		var f float64
		if c.kind == arrowcol.Float32 {
			f = float64(c.F32[i])
		} else {
			f = c.F64[i]
		}
		// Zero is left out only as +0, as proto.Marshal does.
		zero := f == 0 && !math.Signbit(f)
		if zero && !c.presence && !c.wrapped {
			return dst, nil
		}
		dst = append(dst, c.tag...)
		if c.wrapped {
			if zero {
				return append(dst, 0), nil
			}
			if c.conv == cFloat {
				dst = append(dst, 5, 1<<3|byte(protowire.Fixed32Type))
			} else {
				dst = append(dst, 9, 1<<3|byte(protowire.Fixed64Type))
			}
		}
		if c.conv == cFloat {
			return protowire.AppendFixed32(dst, math.Float32bits(float32(f))), nil
		}
		return protowire.AppendFixed64(dst, math.Float64bits(f)), nil

	case arrowcol.Bool:
		v := c.Bool.Value(i)
		if !v && !c.presence && !c.wrapped {
			return dst, nil
		}
		dst = append(dst, c.tag...)
		if c.wrapped {
			if !v {
				return append(dst, 0), nil
			}
			return append(dst, 2, 1<<3|byte(protowire.VarintType), 1), nil
		}
		if v {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil

	case arrowcol.String:
		s := c.Str.Value(i)
		if c.conv == cEnum {
			num, ok := c.enumNum[s]
			if !ok {
				n, err := strconv.ParseInt(s, 10, 32)
				if err != nil {
					return dst, &RecordError{Field: c.field, Reason: fmt.Sprintf("%s names no value of the enum", shownString([]byte(s)))}
				}
				num = int32(n)
			}
			if num == 0 && !c.presence {
				return dst, nil
			}
			dst = append(dst, c.tag...)
			return protowire.AppendVarint(dst, uint64(int64(num))), nil
		}
		if s == "" && !c.presence && !c.wrapped {
			return dst, nil
		}
		dst = append(dst, c.tag...)
		if c.wrapped {
			if s == "" {
				return append(dst, 0), nil
			}
			dst = protowire.AppendVarint(dst, uint64(1+protowire.SizeBytes(len(s))))
			dst = append(dst, 1<<3|byte(protowire.BytesType))
		}
		dst = protowire.AppendVarint(dst, uint64(len(s)))
		return append(dst, s...), nil

	case arrowcol.Decimal:
		var buf [48]byte
		s := arrowcol.AppendDecimal(buf[:0], c.Dec[i], c.scale)
		dst = append(dst, c.tag...)
		if c.wrapped {
			dst = protowire.AppendVarint(dst, uint64(1+protowire.SizeBytes(len(s))))
			dst = append(dst, 1<<3|byte(protowire.BytesType))
		}
		dst = protowire.AppendVarint(dst, uint64(len(s)))
		return append(dst, s...), nil
	}
	panic("unreachable")
}

// appendInt appends v as a field value of integer conv c (signed: the
// encoder refuses unsigned fields).
func appendInt(dst []byte, c conv, v int64) []byte {
	switch c {
	case cSint32, cSint64:
		return protowire.AppendVarint(dst, protowire.EncodeZigZag(v))
	case cSfixed32:
		return protowire.AppendFixed32(dst, uint32(v))
	case cSfixed64:
		return protowire.AppendFixed64(dst, uint64(v))
	}
	return protowire.AppendVarint(dst, uint64(v))
}
