package protobuf

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// Options tunes a Decoder, after Flink's 'protobuf.*' format options.
// ('protobuf.message-class-name' is the message name given to Compile;
// 'protobuf.ignore-parse-errors' is the connector's business: it drops the
// records whose Append returns a *RecordError;
// 'protobuf.write-null-string-literal' concerns nulls inside arrays and
// maps, which no column has.)
type Options struct {
	// Needed, when set, marks the columns the query reads (projection
	// pushdown). The fields of the others are skipped on the wire without
	// being checked or converted, and their columns come out all NULL.
	Needed []bool
	// ReadDefaultValues is 'protobuf.read-default-values': an absent field
	// that has presence (proto2 and proto3 'optional' fields, oneof
	// members, messages such as Timestamp and the wrappers) reads as its
	// default value instead of NULL. Fields without presence (plain proto3
	// scalars, whose zero value a writer leaves out) always read as their
	// default, as in Flink.
	ReadDefaultValues bool
	// Required marks the columns a record must give a value (the source's
	// event-time column): a record that leaves one NULL (an absent field
	// with presence, such as a google.protobuf.Timestamp) is rejected with
	// a *RecordError naming it. A required column is always decoded.
	Required []bool
}

// column is one decoded column: how its field is read and the Arrow
// buffers the decoder writes it into.
//
// Values are written in place at row Decoder.n as they are parsed; the row
// becomes part of the batch only when commit advances n, so a rejected
// record leaves nothing behind (its writes are overwritten by the next).
type column struct {
	arrowcol.Column
	field   string // the message field's name, for errors
	conv    conv
	wrapped bool
	wire    protowire.Type // of the field itself
	op      fastOp
	lo, hi  int64 // range of an integer kind

	prec, scale int32 // of a decimal

	// enum value names by number: dense for 0 <= n < len(enumDense)
	// ("" for none), sorted enumSparse for the others.
	enumDense  [][]byte
	enumSparse []enumName

	// absentNull: an absent field reads as NULL; otherwise as def.
	absentNull bool
	required   bool // Options.Required
	def        defValue

	// set == Decoder.gen when the current row holds a value.
	set uint32
	// A Timestamp's fields so far in this row (occurrences merge).
	sec   int64
	nanos int32
}

// fastOp names the common (field type, column type) pairs that decode
// reads inline, without the general value switch.
type fastOp uint8

const (
	opGeneral fastOp = iota
	opInt64          // int64 into BIGINT or TIMESTAMP(3)
	opInt32          // int32 into INT or DATE: the field's range is the column's
	opDouble         // double into DOUBLE
	opString         // string into VARCHAR
)

type enumName struct {
	num  int32
	name []byte
}

// defValue is a column's value for an absent field, in the column's form.
type defValue struct {
	bits uint64 // integer, float bits, bool 0/1, timestamp ms, date
	dec  decimal128.Num
	str  []byte
	bad  string // why the default cannot be the column's value ("" if it can)
}

// fieldRef tells the decoder what a field number is to it.
type fieldRef struct {
	col   int32 // decoded column, -1 for none
	oneof int32 // index in Decoder.oneofs of the oneof it belongs to, -1 for none
}

var noField = fieldRef{col: -1, oneof: -1}

type sparseRef struct {
	num protowire.Number
	ref fieldRef
}

// oneofState is which member of a oneof the current row last saw.
type oneofState struct {
	gen uint32
	col int32 // its decoded column, -1 for a member no column reads
}

// maxDense caps the field-number table; higher numbers are looked up by
// binary search.
const maxDense = 1024

// Decoder decodes protobuf messages into Arrow arrays. It is not safe for
// concurrent use.
//
// It reads the wire format itself, driven by the reader's descriptor, and
// writes the Arrow buffers (allocated from mem) in place, as the json
// format does: no message object, reflection or allocation per record.
type Decoder struct {
	schema *arrow.Schema
	mem    memory.Allocator
	cols   []column // the decoded columns
	pos    []int    // schema column of each decoded column
	// With projection pushdown, the batch gives the columns not needed
	// all-NULL arrays.
	batch arrowcol.Batch

	dense  []fieldRef
	sparse []sparseRef
	oneofs []oneofState

	n        int    // rows buffered
	gen      uint32 // current row's stamp for column.set
	nset     int    // columns set in the current row
	nullCols int    // columns with a null in the batch so far
	badDefs  bool   // some column's absent field is an error
}

// NewDecoder decodes messages of type md into records of schema, each
// column read from the field it names (see CheckSchema, whose error it
// returns). Fields no (needed) column reads are skipped.
func NewDecoder(schema *arrow.Schema, md protoreflect.MessageDescriptor, mem memory.Allocator, opts Options) (*Decoder, error) {
	bs, err := bind(schema, md)
	if err != nil {
		return nil, err
	}
	d := &Decoder{
		schema: schema,
		mem:    mem,
	}
	refs := map[protowire.Number]fieldRef{}
	oneofIdx := map[protoreflect.FullName]int32{}
	for c := range bs {
		required := c < len(opts.Required) && opts.Required[c]
		if opts.Needed != nil && c < len(opts.Needed) && !opts.Needed[c] && !required {
			continue
		}
		b := &bs[c]
		col, err := newColumn(schema.Field(c), b, opts)
		if err != nil {
			return nil, err
		}
		col.required = required
		if col.def.bad != "" && !col.absentNull || required {
			d.badDefs = true
		}
		ci := int32(len(d.cols))
		d.cols = append(d.cols, col)
		d.pos = append(d.pos, c)
		ref := fieldRef{col: ci, oneof: -1}
		if od := b.field.ContainingOneof(); od != nil && !od.IsSynthetic() {
			// Every member of the oneof clears the others, also members
			// no column reads.
			g, ok := oneofIdx[od.FullName()]
			if !ok {
				g = int32(len(d.oneofs))
				oneofIdx[od.FullName()] = g
				d.oneofs = append(d.oneofs, oneofState{})
				for i := 0; i < od.Fields().Len(); i++ {
					num := od.Fields().Get(i).Number()
					if _, ok := refs[num]; !ok {
						refs[num] = fieldRef{col: -1, oneof: g}
					}
				}
			}
			ref.oneof = g
		}
		refs[b.field.Number()] = ref
	}
	top := protowire.Number(0)
	for num := range refs {
		if num < maxDense {
			top = max(top, num)
		}
	}
	d.dense = make([]fieldRef, top+1)
	for i := range d.dense {
		d.dense[i] = noField
	}
	for num, ref := range refs {
		if num < maxDense {
			d.dense[num] = ref
		} else {
			d.sparse = append(d.sparse, sparseRef{num, ref})
		}
	}
	sort.Slice(d.sparse, func(i, j int) bool { return d.sparse[i].num < d.sparse[j].num })
	bufs := make([]*arrowcol.Column, len(d.cols))
	for c := range d.cols {
		bufs[c] = &d.cols[c].Column
	}
	d.batch.Init(schema, mem, bufs, d.pos)
	return d, nil
}

// newColumn sets up the decoding of column f from its field.
func newColumn(f arrow.Field, b *binding, opts Options) (column, error) {
	fd := b.field
	col := column{
		field:   string(fd.Name()),
		conv:    b.conv,
		wrapped: b.wrapped,
		wire:    b.wire(),
	}
	col.Init(f.Type)
	switch {
	case col.wrapped:
	case col.conv == cInt64 && (col.Kind == arrowcol.Int64 || col.Kind == arrowcol.TimestampMs):
		col.op = opInt64
	case col.conv == cInt32 && (col.Kind == arrowcol.Int32 || col.Kind == arrowcol.Date):
		col.op = opInt32
	case col.conv == cDouble && col.Kind == arrowcol.Float64:
		col.op = opDouble
	case col.conv == cString && col.Kind == arrowcol.String:
		col.op = opString
	}
	switch col.Kind {
	case arrowcol.Int8:
		col.lo, col.hi = math.MinInt8, math.MaxInt8
	case arrowcol.Int16:
		col.lo, col.hi = math.MinInt16, math.MaxInt16
	case arrowcol.Int32, arrowcol.Date:
		col.lo, col.hi = math.MinInt32, math.MaxInt32
	case arrowcol.Int64, arrowcol.TimestampMs:
		col.lo, col.hi = math.MinInt64, math.MaxInt64
	case arrowcol.Decimal:
		t := f.Type.(*arrow.Decimal128Type)
		col.prec, col.scale = t.Precision, t.Scale
	}
	if col.conv == cEnum {
		vals := fd.Enum().Values()
		seen := map[protoreflect.EnumNumber]bool{}
		for i := 0; i < vals.Len(); i++ {
			num := vals.Get(i).Number()
			if seen[num] {
				continue // an alias: the first name wins, as ByNumber
			}
			seen[num] = true
			name := []byte(vals.Get(i).Name())
			if 0 <= num && num < maxDense {
				for int(num) >= len(col.enumDense) {
					col.enumDense = append(col.enumDense, nil)
				}
				col.enumDense[num] = name
			} else {
				col.enumSparse = append(col.enumSparse, enumName{int32(num), name})
			}
		}
		sort.Slice(col.enumSparse, func(i, j int) bool { return col.enumSparse[i].num < col.enumSparse[j].num })
	}
	col.def = col.defaultValue(fd)
	col.absentNull = f.Nullable && (fd.HasPresence() && !opts.ReadDefaultValues || col.def.bad != "")
	return col, nil
}

// enumName is the name of enum value num, nil if it has none.
func (col *column) enumName(num protoreflect.EnumNumber) []byte {
	if 0 <= num && int(num) < len(col.enumDense) {
		return col.enumDense[num]
	}
	i := sort.Search(len(col.enumSparse), func(i int) bool { return col.enumSparse[i].num >= int32(num) })
	if i < len(col.enumSparse) && col.enumSparse[i].num == int32(num) {
		return col.enumSparse[i].name
	}
	return nil
}

// defaultValue is what an absent field reads as: its declared default
// (proto2 [default = ...]) or zero value; for Timestamp and the wrappers,
// the zero value of the message's fields.
func (col *column) defaultValue(fd protoreflect.FieldDescriptor) defValue {
	var dv defValue
	var v protoreflect.Value
	if fd.Kind() != protoreflect.MessageKind {
		v = fd.Default()
	}
	switch {
	case col.conv == cTimestamp || col.wrapped && col.conv != cString:
		// zero
	case col.conv == cEnum:
		// Without an explicit default, the first value listed.
		num := fd.Enum().Values().Get(0).Number()
		if ev := fd.DefaultEnumValue(); ev != nil {
			num = ev.Number()
		}
		if name := col.enumName(num); name != nil {
			dv.str = name
		} else {
			dv.str = strconv.AppendInt(nil, int64(num), 10)
		}
	case col.conv == cString:
		var s string
		if v.IsValid() {
			s = v.String()
		}
		if col.Kind == arrowcol.Decimal {
			n, end, ok := arrowcol.ScanDecimal([]byte(s), 0)
			if !ok || end != len(s) {
				dv.bad = fmt.Sprintf("absent, and its default %q is not a number", s)
			} else if dv.dec, ok = n.ToDecimal([]byte(s), col.prec, col.scale); !ok {
				dv.bad = fmt.Sprintf("absent, and its default %q does not fit DECIMAL(%d, %d)", s, col.prec, col.scale)
			}
		} else {
			dv.str = []byte(s)
		}
	case col.conv == cBool:
		if v.Bool() {
			dv.bits = 1
		}
	case col.conv == cFloat:
		if col.Kind == arrowcol.Float32 {
			dv.bits = uint64(math.Float32bits(float32(v.Float())))
		} else {
			dv.bits = math.Float64bits(v.Float())
		}
	case col.conv == cDouble:
		dv.bits = math.Float64bits(v.Float())
	case col.conv.isUnsigned():
		u := v.Uint()
		if u > uint64(col.hi) {
			dv.bad = fmt.Sprintf("absent, and its default %d is out of range for %s", u, col.Type)
		}
		dv.bits = u
	default:
		i := v.Int()
		if i < col.lo || i > col.hi {
			dv.bad = fmt.Sprintf("absent, and its default %d is out of range for %s", i, col.Type)
		}
		dv.bits = uint64(i)
	}
	return dv
}

// Len is the number of rows buffered since the last Flush.
func (d *Decoder) Len() int { return d.n }

// Flush returns a new record of the buffered rows (the caller owns it) and
// starts a new batch, pre-sized like this one.
func (d *Decoder) Flush() arrow.RecordBatch {
	rec := d.batch.Flush(d.n)
	d.n = 0
	d.nullCols = 0
	return rec
}

// Release frees the buffers of rows not yet flushed. The Decoder must not be
// used afterwards.
func (d *Decoder) Release() {
	d.batch.Release()
	d.cols = nil
}

// Append decodes one serialized message (a Kafka record's value, without
// any schema-registry framing) and appends it as a row. On error it
// appends nothing and returns a *RecordError. An empty value is a valid
// message with every field absent.
func (d *Decoder) Append(value []byte) error {
	if d.n == d.batch.Cap {
		d.batch.Grow(2 * d.batch.Cap)
	}
	if d.gen++; d.gen == 0 {
		for c := range d.cols {
			d.cols[c].set = 0
		}
		for g := range d.oneofs {
			d.oneofs[g].gen = 0
		}
		d.gen = 1
	}
	d.nset = 0
	if err := d.decode(value); err != nil {
		return err
	}
	if d.nset != len(d.cols) || d.nullCols != 0 {
		if err := d.commitSlow(); err != nil {
			return err
		}
	}
	d.n++
	return nil
}

// lookupSparse is what field number num, beyond the dense table, is to
// the decoder.
func (d *Decoder) lookupSparse(num protowire.Number) fieldRef {
	s := d.sparse
	i := sort.Search(len(s), func(i int) bool { return s[i].num >= num })
	if i < len(s) && s[i].num == num {
		return s[i].ref
	}
	return noField
}

// decode parses a message into the scratch row.
func (d *Decoder) decode(b []byte) *RecordError {
	for i := 0; i < len(b); {
		start := i
		var tag uint64
		if c := b[i]; c < 0x80 {
			tag = uint64(c)
			i++
		} else {
			v, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return wireError(i, n)
			}
			tag, i = v, i+n
		}
		num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
		if tag>>3 < uint64(protowire.MinValidNumber) || tag>>3 > uint64(protowire.MaxValidNumber) {
			return &RecordError{Offset: start, Reason: fmt.Sprintf("invalid field number %d", tag>>3)}
		}
		var ref fieldRef
		if int(num) < len(d.dense) {
			ref = d.dense[num]
		} else {
			ref = d.lookupSparse(num)
		}
		if ref.oneof >= 0 {
			d.oneof(ref)
		}
		if ref.col < 0 {
			n := protowire.ConsumeFieldValue(num, wt, b[i:])
			if n < 0 {
				return wireError(i, n)
			}
			i += n
			continue
		}
		col := &d.cols[ref.col]
		if wt != col.wire {
			return &RecordError{Offset: start, Field: col.field,
				Reason: fmt.Sprintf("wire type %s, want %s for its declared type", wireTypeName(wt), wireTypeName(col.wire))}
		}
		switch col.op {
		case opInt64, opInt32:
			var u uint64
			if i < len(b) && b[i] < 0x80 {
				u = uint64(b[i])
				i++
			} else {
				v, n := protowire.ConsumeVarint(b[i:])
				if n < 0 {
					return wireError(i, n)
				}
				u, i = v, i+n
			}
			if col.op == opInt64 {
				col.V8[d.n] = u
			} else {
				col.V4[d.n] = uint32(u)
			}
			d.isSet(col)
			continue
		case opDouble:
			if len(b)-i < 8 {
				return &RecordError{Offset: i, Reason: "truncated"}
			}
			col.V8[d.n] = binary.LittleEndian.Uint64(b[i:])
			i += 8
			d.isSet(col)
			continue
		case opString:
			var l uint64
			at := i
			if i < len(b) && b[i] < 0x80 {
				l = uint64(b[i])
				i++
			} else {
				v, n := protowire.ConsumeVarint(b[i:])
				if n < 0 {
					return wireError(i, n)
				}
				l, i = v, i+n
			}
			if l > uint64(len(b)-i) {
				return &RecordError{Offset: at, Reason: "truncated"}
			}
			s := b[i : i+int(l)]
			i += int(l)
			if !isASCII(s) && !utf8.Valid(s) {
				return &RecordError{Offset: at, Field: col.field, Reason: "invalid UTF-8 in a string field"}
			}
			start := int(col.Off[d.n])
			if e := start + len(s); e <= len(col.Dat) {
				copy(col.Dat[start:e], s)
				col.Off[d.n+1] = int32(e)
				d.isSet(col)
			} else if err := d.putString(col, s, at); err != nil {
				return err
			}
			continue
		}
		var err *RecordError
		if col.wrapped {
			i, err = d.wrapper(col, b, i)
		} else {
			i, err = d.value(col, col.conv, b, i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isASCII reports whether short s is all ASCII, a word at a time; longer
// strings go to utf8.Valid, which has its own ASCII fast path.
func isASCII(s []byte) bool {
	if len(s) > 32 {
		return false
	}
	var acc uint64
	for len(s) >= 8 {
		acc |= binary.LittleEndian.Uint64(s)
		s = s[8:]
	}
	for _, c := range s {
		acc |= uint64(c)
	}
	return acc&0x8080808080808080 == 0
}

// oneof records that the row saw a member of ref's oneof: the member seen
// before it, if another, is cleared.
func (d *Decoder) oneof(ref fieldRef) {
	o := &d.oneofs[ref.oneof]
	if o.gen == d.gen && o.col != ref.col && o.col >= 0 {
		if prev := &d.cols[o.col]; prev.set == d.gen {
			prev.set = 0
			d.nset--
		}
	}
	o.gen, o.col = d.gen, ref.col
}

// varint reads the varint at b[i:].
func varint(b []byte, i int) (uint64, int, *RecordError) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, nil
	}
	v, n := protowire.ConsumeVarint(b[i:])
	if n < 0 {
		return 0, 0, wireError(i, n)
	}
	return v, i + n, nil
}

// bytesAt reads the length-delimited value at b[i:]: its start and end.
func bytesAt(b []byte, i int) (int, int, *RecordError) {
	l, j, err := varint(b, i)
	if err != nil {
		return 0, 0, err
	}
	if l > uint64(len(b)-j) {
		return 0, 0, &RecordError{Offset: i, Reason: "truncated"}
	}
	return j, j + int(l), nil
}

// value reads the value of conv c at b[i:], of the wire type c.wire() the
// caller has checked, into col's row d.n.
func (d *Decoder) value(col *column, c conv, b []byte, i int) (int, *RecordError) {
	switch c {
	case cFloat:
		if len(b)-i < 4 {
			return 0, &RecordError{Offset: i, Reason: "truncated"}
		}
		u := binary.LittleEndian.Uint32(b[i:])
		if col.Kind == arrowcol.Float32 {
			col.V4[d.n] = u
		} else {
			col.V8[d.n] = math.Float64bits(float64(math.Float32frombits(u)))
		}
		d.isSet(col)
		return i + 4, nil
	case cDouble:
		if len(b)-i < 8 {
			return 0, &RecordError{Offset: i, Reason: "truncated"}
		}
		col.V8[d.n] = binary.LittleEndian.Uint64(b[i:])
		d.isSet(col)
		return i + 8, nil
	case cFixed32, cSfixed32:
		if len(b)-i < 4 {
			return 0, &RecordError{Offset: i, Reason: "truncated"}
		}
		u := binary.LittleEndian.Uint32(b[i:])
		v := int64(u)
		if c == cSfixed32 {
			v = int64(int32(u))
		}
		return i + 4, d.storeInt(col, v, false, i)
	case cFixed64, cSfixed64:
		if len(b)-i < 8 {
			return 0, &RecordError{Offset: i, Reason: "truncated"}
		}
		u := binary.LittleEndian.Uint64(b[i:])
		return i + 8, d.storeInt(col, int64(u), c == cFixed64 && u > math.MaxInt64, i)
	case cString:
		s, e, err := bytesAt(b, i)
		if err != nil {
			return 0, err
		}
		if col.Kind == arrowcol.Decimal {
			return e, d.decimal(col, b[s:e], i)
		}
		if !utf8.Valid(b[s:e]) {
			return 0, &RecordError{Offset: i, Field: col.field, Reason: "invalid UTF-8 in a string field"}
		}
		return e, d.putString(col, b[s:e], i)
	case cTimestamp:
		s, e, err := bytesAt(b, i)
		if err != nil {
			return 0, err
		}
		return e, d.timestamp(col, b[s:e], s)
	}
	// varint kinds
	u, j, err := varint(b, i)
	if err != nil {
		return 0, err
	}
	var v int64
	switch c {
	case cInt64:
		if col.Kind == arrowcol.Int64 || col.Kind == arrowcol.TimestampMs {
			// The common case, without the range check.
			col.V8[d.n] = u
			d.isSet(col)
			return j, nil
		}
		v = int64(u)
	case cInt32:
		v = int64(int32(u))
	case cUint32:
		v = int64(uint32(u))
	case cUint64:
		return j, d.storeInt(col, int64(u), u > math.MaxInt64, i)
	case cSint32:
		v = int64(int32(protowire.DecodeZigZag(u & math.MaxUint32)))
	case cSint64:
		v = protowire.DecodeZigZag(u)
	case cBool:
		if u != 0 {
			bitutil.SetBit(col.V1, d.n)
		} else {
			bitutil.ClearBit(col.V1, d.n)
		}
		d.isSet(col)
		return j, nil
	case cEnum:
		num := protoreflect.EnumNumber(int32(u))
		if name := col.enumName(num); name != nil {
			return j, d.putString(col, name, i)
		}
		var tmp [12]byte
		return j, d.putString(col, strconv.AppendInt(tmp[:0], int64(num), 10), i)
	}
	return j, d.storeInt(col, v, false, i)
}

// storeInt writes integer v (or, if big, a uint64 above MaxInt64) into
// col's row d.n, checking the column's range.
func (d *Decoder) storeInt(col *column, v int64, big bool, at int) *RecordError {
	if big || v < col.lo || v > col.hi {
		var shown string
		if big {
			shown = strconv.FormatUint(uint64(v), 10)
		} else {
			shown = strconv.FormatInt(v, 10)
		}
		return &RecordError{Offset: at, Field: col.field, Reason: fmt.Sprintf("%s out of range for %s", shown, col.Type)}
	}
	switch col.Kind {
	case arrowcol.Int64, arrowcol.TimestampMs:
		col.V8[d.n] = uint64(v)
	case arrowcol.Int32, arrowcol.Date:
		col.V4[d.n] = uint32(v)
	case arrowcol.Int16:
		col.V2[d.n] = uint16(v)
	default:
		col.V1[d.n] = byte(v)
	}
	d.isSet(col)
	return nil
}

// putString writes s as col's value in row d.n (replacing an earlier one).
func (d *Decoder) putString(col *column, s []byte, at int) *RecordError {
	if !col.PutString(d.n, s) {
		return &RecordError{Offset: at, Field: col.field, Reason: "string data of the batch exceeds 2 GiB; flush more often"}
	}
	d.isSet(col)
	return nil
}

// decimal parses the text of a string field into a DECIMAL column.
func (d *Decoder) decimal(col *column, s []byte, at int) *RecordError {
	n, end, ok := arrowcol.ScanDecimal(s, 0)
	if !ok || end != len(s) {
		return &RecordError{Offset: at, Field: col.field, Reason: "expected a decimal number, found " + shownString(s)}
	}
	v, ok := n.ToDecimal(s, col.prec, col.scale)
	if !ok {
		return &RecordError{Offset: at, Field: col.field, Reason: fmt.Sprintf("%s does not fit DECIMAL(%d, %d)", shownString(s), col.prec, col.scale)}
	}
	col.PutDecimal(d.n, v)
	d.isSet(col)
	return nil
}

// maxShown caps how much of a rejected string an error message repeats.
const maxShown = 40

func shownString(s []byte) string {
	if len(s) > maxShown {
		n := maxShown
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return strconv.Quote(string(s[:n])) + "..."
	}
	return strconv.Quote(string(s))
}

// timestamp reads a google.protobuf.Timestamp message b (at offset base of
// the record) into col; occurrences of the field merge, as in protobuf.
func (d *Decoder) timestamp(col *column, b []byte, base int) *RecordError {
	if col.set != d.gen {
		col.sec, col.nanos = 0, 0
	}
	for i := 0; i < len(b); {
		num, wt, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return wireError(base+i, n)
		}
		i += n
		if (num == 1 || num == 2) && wt != protowire.VarintType {
			return &RecordError{Offset: base + i - n, Field: col.field,
				Reason: fmt.Sprintf("Timestamp field %d: wire type %s, want varint", num, wireTypeName(wt))}
		}
		switch num {
		case 1:
			u, j, err := varint(b, i)
			if err != nil {
				err.Offset += base
				return err
			}
			col.sec, i = int64(u), j
		case 2:
			u, j, err := varint(b, i)
			if err != nil {
				err.Offset += base
				return err
			}
			col.nanos, i = int32(u), j
		default:
			m := protowire.ConsumeFieldValue(num, wt, b[i:])
			if m < 0 {
				return wireError(base+i, m)
			}
			i += m
		}
	}
	if col.nanos < 0 || col.nanos > 999_999_999 {
		return &RecordError{Offset: base, Field: col.field, Reason: fmt.Sprintf("Timestamp nanos %d out of range [0, 999999999]", col.nanos)}
	}
	const lim = math.MaxInt64/1000 - 1
	if col.sec > lim || col.sec < -lim {
		return &RecordError{Offset: base, Field: col.field, Reason: fmt.Sprintf("Timestamp seconds %d out of range for TIMESTAMP(3)", col.sec)}
	}
	col.V8[d.n] = uint64(col.sec*1000 + int64(col.nanos/1_000_000))
	d.isSet(col)
	return nil
}

// wrapper reads a google.protobuf.*Value message at b[i:] into col. A
// wrapper without its value field holds the zero value; occurrences merge.
func (d *Decoder) wrapper(col *column, b []byte, i int) (int, *RecordError) {
	s, e, err := bytesAt(b, i)
	if err != nil {
		return 0, err
	}
	if col.set != d.gen {
		d.putZero(col)
	}
	want := col.conv.wire()
	for j := s; j < e; {
		num, wt, n := protowire.ConsumeTag(b[j:e])
		if n < 0 {
			return 0, wireError(j, n)
		}
		j += n
		if num != 1 {
			m := protowire.ConsumeFieldValue(num, wt, b[j:e])
			if m < 0 {
				return 0, wireError(j, m)
			}
			j += m
			continue
		}
		if wt != want {
			return 0, &RecordError{Offset: j - n, Field: col.field,
				Reason: fmt.Sprintf("wrapper value: wire type %s, want %s", wireTypeName(wt), wireTypeName(want))}
		}
		if j, err = d.value(col, col.conv, b[:e], j); err != nil {
			return 0, err
		}
	}
	return e, nil
}

// putZero sets col's row d.n to the zero value of its field's type.
func (d *Decoder) putZero(col *column) {
	col.Zero(d.n)
	d.isSet(col)
}

// isSet records that col holds a value in the current row.
func (d *Decoder) isSet(col *column) {
	if col.set != d.gen {
		col.set = d.gen
		d.nset++
	}
}

// commitSlow completes row d.n when some column is absent from the record
// or the batch has nulls: absent fields become NULL or their default.
func (d *Decoder) commitSlow() *RecordError {
	n := d.n
	if d.badDefs {
		for c := range d.cols {
			if col := &d.cols[c]; col.set != d.gen && !col.absentNull && col.def.bad != "" {
				return &RecordError{Field: col.field, Reason: col.def.bad}
			} else if col.set != d.gen && col.absentNull && col.required {
				return &RecordError{Field: col.field, Reason: "null or missing, and it must hold a value (the event-time column)"}
			}
		}
	}
	for c := range d.cols {
		col := &d.cols[c]
		if col.set != d.gen && !col.absentNull {
			if err := d.putDefault(col); err != nil {
				return err
			}
		}
	}
	for c := range d.cols {
		col := &d.cols[c]
		if col.set == d.gen {
			col.SetValid(n)
			continue
		}
		if col.SetNull(n, d.batch.Cap) {
			d.nullCols++
		}
		col.Nulls++
	}
	return nil
}

// putDefault writes col's default value into row d.n.
func (d *Decoder) putDefault(col *column) *RecordError {
	switch col.Kind {
	case arrowcol.String:
		return d.putString(col, col.def.str, 0)
	case arrowcol.Decimal:
		col.PutDecimal(d.n, col.def.dec)
	case arrowcol.Bool:
		if col.def.bits != 0 {
			bitutil.SetBit(col.V1, d.n)
		} else {
			bitutil.ClearBit(col.V1, d.n)
		}
	case arrowcol.Int8:
		col.V1[d.n] = byte(col.def.bits)
	case arrowcol.Int16:
		col.V2[d.n] = uint16(col.def.bits)
	case arrowcol.Int32, arrowcol.Float32, arrowcol.Date:
		col.V4[d.n] = uint32(col.def.bits)
	default:
		col.V8[d.n] = col.def.bits
	}
	d.isSet(col)
	return nil
}
