package json

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Options tunes a Decoder. It is empty for now: every accepted input form
// (timestamps as epoch ms, 'YYYY-MM-DD HH:MM:SS[.fff]' or RFC 3339) is
// always on, so no format switch is needed. Flink's 'json.*' options belong
// here when connectors need them.
type Options struct{}

// kind is a column's type as the decoder and encoder handle it.
type kind uint8

const (
	kInvalid kind = iota
	kInt8
	kInt16
	kInt32
	kInt64
	kFloat32
	kFloat64
	kString
	kBool
	kTimestamp
	kDecimal
)

// decodeKind maps an Arrow type to the kind the decoder fills it as.
func decodeKind(dt arrow.DataType) kind {
	switch dt.ID() {
	case arrow.INT8:
		return kInt8
	case arrow.INT16:
		return kInt16
	case arrow.INT32:
		return kInt32
	case arrow.INT64:
		return kInt64
	case arrow.FLOAT32:
		return kFloat32
	case arrow.FLOAT64:
		return kFloat64
	case arrow.STRING:
		return kString
	case arrow.BOOL:
		return kBool
	case arrow.TIMESTAMP:
		if dt.(*arrow.TimestampType).Unit == arrow.Millisecond {
			return kTimestamp
		}
	case arrow.DECIMAL128:
		if t := dt.(*arrow.Decimal128Type); 1 <= t.Precision && t.Precision <= 38 && 0 <= t.Scale && t.Scale <= t.Precision {
			return kDecimal
		}
	}
	return kInvalid
}

// CheckSchema reports whether the Decoder can fill every column of schema:
// int8/16/32/64, float32/64, string, bool, timestamp(ms) and
// decimal128(p, s) with 1 <= p <= 38 and 0 <= s <= p.
//
// A DECIMAL column takes a JSON number, or a string holding one as Flink's
// JSON format does ("12.345"), at its exact value: digits beyond the scale
// are rounded HALF_UP (ties away from zero, as Java's BigDecimal
// ROUND_HALF_UP), and a value that then needs more than p digits is
// rejected.
func CheckSchema(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		if decodeKind(f.Type) == kInvalid {
			return fmt.Errorf("json format: column %q: type %s is not supported", f.Name, f.Type)
		}
	}
	return nil
}

// column is one schema column: its name and the Arrow buffers the decoder
// writes it into.
//
// Values are written in place at row Decoder.n as they are parsed; the row
// becomes part of the batch only when commit advances n, so a rejected line
// leaves nothing behind (its writes are overwritten by the next line).
type column struct {
	name   string
	nameB  []byte
	typ    arrow.DataType
	kind   kind
	lo, hi int64 // range of an integer kind

	prec, scale int32 // of a decimal

	// set == Decoder.gen when the current row holds a non-null value (a
	// missing field and JSON null both leave the row null).
	set uint32

	// Validity is only written once the batch has a null in this column:
	// until then nulls == 0 and the array gets no bitmap.
	valid *memory.Buffer
	bits  []byte
	nulls int

	vals *memory.Buffer // values (a bitmap for bool; offsets for string)
	v1   []byte
	v2   []uint16
	v4   []uint32
	v8   []uint64
	off  []int32        // string offsets: row r is dat[off[r]:off[r+1]]
	data *memory.Buffer // string bytes
	dat  []byte
}

// slot remembers the k-th key of the previous row and its column, so that
// rows with the same layout match each key with a word compare or two.
type slot struct {
	key []byte
	col int32 // -1: the key is not a column
	n   int   // len(key)+1
	// raw: the key appears in the line as is (no escapes), so the next
	// line's key can be compared in place. When it is also at most 15
	// bytes, key+`"` is packed into two little-endian words, masked to its
	// length, for the inline compare in decode.
	raw          bool
	words        bool
	pat0, pat1   uint64
	mask0, mask1 uint64
}

func (s *slot) remember(key []byte, col int, raw bool) {
	s.key = append(s.key[:0], key...)
	s.col = int32(col)
	s.n = len(key) + 1
	s.raw = raw
	s.words = raw && s.n <= 16
	if !s.words {
		return
	}
	var p [16]byte
	copy(p[:], key)
	p[len(key)] = '"'
	s.pat0 = binary.LittleEndian.Uint64(p[:8])
	s.pat1 = binary.LittleEndian.Uint64(p[8:])
	s.mask0, s.mask1 = lowBytes(s.n), lowBytes(s.n-8)
}

// lowBytes is a mask of the n low bytes of a word (n clamped to 0..8).
func lowBytes(n int) uint64 {
	switch {
	case n <= 0:
		return 0
	case n >= 8:
		return math.MaxUint64
	}
	return 1<<(8*n) - 1
}

// matches reports whether the key whose quote is at line[i] is s's key,
// without the word compare (see decode).
func (s *slot) matches(line []byte, i int) bool {
	j := i + 1
	e := j + len(s.key)
	return s.raw && e < len(line) && line[e] == '"' && string(line[j:e]) == string(s.key)
}

// Decoder decodes JSON lines into Arrow arrays. It is not safe for
// concurrent use.
//
// It writes the Arrow buffers (allocated from mem) itself rather than going
// through arrow-go's builders: their per-value capacity checks and the
// String builder's indirect offset append cost as much as all the parsing
// (see BenchmarkDecode).
type Decoder struct {
	schema   *arrow.Schema
	mem      memory.Allocator
	cols     []column
	slots    []slot
	buf      []byte // strings of the current row that needed unescaping
	n        int    // rows buffered
	cap      int    // rows the buffers have room for
	gen      uint32 // current row's stamp for column.set
	nset     int    // columns set in the current row
	nullCols int    // columns with a null in the batch so far
}

// minRows is the room the first batch starts with.
const minRows = 256

// NewDecoder decodes objects whose fields are the schema's columns, matched
// by exact name first, then case-insensitively (Unicode simple folding);
// other fields are validated and skipped without allocation. It panics if
// CheckSchema(schema) fails: the planner checks the schema first.
func NewDecoder(schema *arrow.Schema, mem memory.Allocator, opts Options) *Decoder {
	if err := CheckSchema(schema); err != nil {
		panic(err)
	}
	d := &Decoder{
		schema: schema,
		mem:    mem,
		cols:   make([]column, schema.NumFields()),
		slots:  make([]slot, 2*schema.NumFields()+8),
	}
	for k := range d.slots {
		d.slots[k].col = -1
	}
	for c, f := range schema.Fields() {
		col := &d.cols[c]
		col.name = f.Name
		col.nameB = []byte(f.Name)
		col.typ = f.Type
		col.kind = decodeKind(f.Type)
		switch col.kind {
		case kInt8:
			col.lo, col.hi = -1<<7, 1<<7-1
		case kInt16:
			col.lo, col.hi = -1<<15, 1<<15-1
		case kInt32:
			col.lo, col.hi = -1<<31, 1<<31-1
		case kDecimal:
			t := f.Type.(*arrow.Decimal128Type)
			col.prec, col.scale = t.Precision, t.Scale
		}
	}
	d.alloc(minRows, 0)
	return d
}

// alloc gives every column fresh buffers with room for rows rows (and
// strBytes string bytes per string column).
func (d *Decoder) alloc(rows, strBytes int) {
	for c := range d.cols {
		col := &d.cols[c]
		col.valid = memory.NewResizableBuffer(d.mem)
		col.vals = memory.NewResizableBuffer(d.mem)
		col.bits = nil
		col.nulls = 0
		if col.kind == kString {
			col.data = memory.NewResizableBuffer(d.mem)
			col.data.Reserve(max(strBytes, 64))
			col.dat = col.data.Buf()
		}
	}
	d.nullCols = 0
	d.cap = 0
	d.grow(rows)
	for c := range d.cols {
		if col := &d.cols[c]; col.kind == kString {
			col.off[0] = 0
		}
	}
}

// grow makes room for rows rows in every column, keeping their contents.
func (d *Decoder) grow(rows int) {
	for c := range d.cols {
		col := &d.cols[c]
		if col.nulls > 0 {
			col.valid.Reserve(int(bitutil.BytesForBits(int64(rows))))
			col.bits = col.valid.Buf()
		}
		switch col.kind {
		case kBool:
			col.vals.Reserve(int(bitutil.BytesForBits(int64(rows))))
			col.v1 = col.vals.Buf()
		case kInt8:
			col.vals.Reserve(rows)
			col.v1 = col.vals.Buf()
		case kInt16:
			col.vals.Reserve(2 * rows)
			col.v2 = arrow.Uint16Traits.CastFromBytes(col.vals.Buf())
		case kInt32, kFloat32:
			col.vals.Reserve(4 * rows)
			col.v4 = arrow.Uint32Traits.CastFromBytes(col.vals.Buf())
		case kInt64, kFloat64, kTimestamp:
			col.vals.Reserve(8 * rows)
			col.v8 = arrow.Uint64Traits.CastFromBytes(col.vals.Buf())
		case kDecimal: // row r is v8[2r] (low word), v8[2r+1] (high word)
			col.vals.Reserve(16 * rows)
			col.v8 = arrow.Uint64Traits.CastFromBytes(col.vals.Buf())
		case kString:
			col.vals.Reserve(4 * (rows + 1))
			col.off = arrow.Int32Traits.CastFromBytes(col.vals.Buf())
		}
	}
	d.cap = rows
}

// firstNull starts col's validity bitmap at row n: rows before it are
// valid.
func (d *Decoder) firstNull(col *column, n int) {
	col.valid.Reserve(int(bitutil.BytesForBits(int64(d.cap))))
	col.bits = col.valid.Buf()
	bitutil.SetBitsTo(col.bits, 0, int64(n), true)
	d.nullCols++
}

// Len is the number of rows buffered since the last Flush.
func (d *Decoder) Len() int { return d.n }

// Flush returns a new record of the buffered rows (the caller owns it) and
// starts a new batch, pre-sized like this one.
func (d *Decoder) Flush() arrow.RecordBatch {
	n := d.n
	arrs := make([]arrow.Array, len(d.cols))
	strBytes := 0
	for c := range d.cols {
		col := &d.cols[c]
		var valid *memory.Buffer
		if col.nulls > 0 {
			col.valid.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
			valid = col.valid
		}
		bufs := []*memory.Buffer{valid, col.vals}
		switch col.kind {
		case kBool:
			col.vals.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
		case kString:
			col.vals.ResizeNoShrink(4 * (n + 1))
			dataLen := int(col.off[n])
			col.data.ResizeNoShrink(dataLen)
			strBytes = max(strBytes, dataLen)
			bufs = append(bufs, col.data)
		default:
			col.vals.ResizeNoShrink(n * col.typ.(arrow.FixedWidthDataType).BitWidth() / 8)
		}
		data := array.NewData(col.typ, n, bufs, nil, col.nulls, 0)
		arrs[c] = array.MakeFromData(data)
		data.Release()
		col.release()
	}
	rec := array.NewRecordBatch(d.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	d.n = 0
	d.alloc(max(n, minRows), strBytes)
	return rec
}

func (col *column) release() {
	col.valid.Release()
	col.vals.Release()
	if col.data != nil {
		col.data.Release()
	}
}

// Release frees the buffers of rows not yet flushed. The Decoder must not be
// used afterwards.
func (d *Decoder) Release() {
	for c := range d.cols {
		d.cols[c].release()
	}
	d.cols = nil
}

// Append decodes one line holding one JSON object and appends it as a row.
// Whitespace (including a trailing "\r\n") may surround every token. On
// error it appends nothing and returns a *RecordError. A blank line is an
// error ("empty line"); callers that allow blank lines skip them first.
func (d *Decoder) Append(line []byte) error {
	if d.n == d.cap {
		d.grow(2 * d.cap)
	}
	if d.gen++; d.gen == 0 {
		for c := range d.cols {
			d.cols[c].set = 0
		}
		d.gen = 1
	}
	d.nset = 0
	if err := d.decode(line); err != nil {
		return err
	}
	d.commit()
	return nil
}

// decode parses line into the scratch row.
func (d *Decoder) decode(line []byte) *RecordError {
	i := skipWS(line, 0)
	if i == len(line) {
		return &RecordError{Reason: "empty line"}
	}
	if line[i] != '{' {
		return syntaxError(line, i, "an object")
	}
	d.buf = d.buf[:0]
	i = skipWS(line, i+1)
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for k := 0; ; k++ {
			if i >= len(line) || line[i] != '"' {
				return syntaxError(line, i, "")
			}
			c := -2
			if k < len(d.slots) {
				// Fast path: the same key as the k-th of the last row.
				s := &d.slots[k]
				if j := i + 1; s.words && j+16 <= len(line) {
					if (binary.LittleEndian.Uint64(line[j:])^s.pat0)&s.mask0|
						(binary.LittleEndian.Uint64(line[j+8:])^s.pat1)&s.mask1 == 0 {
						c, i = int(s.col), i+s.n+1
					}
				} else if s.matches(line, i) {
					c, i = int(s.col), i+s.n+1
				}
			}
			if c == -2 {
				var err *RecordError
				if c, i, err = d.key(k, line, i); err != nil {
					return err
				}
			}

			i = skipWS(line, i)
			if i >= len(line) || line[i] != ':' {
				return syntaxError(line, i, "")
			}
			i = skipWS(line, i+1)
			var err *RecordError
			if c < 0 {
				i, err = skipValue(line, i, 1)
			} else {
				i, err = d.value(&d.cols[c], line, i)
			}
			if err != nil {
				return err
			}

			i = skipWS(line, i)
			if i >= len(line) {
				return syntaxError(line, i, "")
			}
			if line[i] == ',' {
				i = skipWS(line, i+1)
				continue
			}
			if line[i] == '}' {
				i++
				break
			}
			return syntaxError(line, i, "")
		}
	}
	if i = skipWS(line, i); i != len(line) {
		return &RecordError{Column: i + 1, Reason: "unexpected trailing data"}
	}
	return nil
}

// key reads the k-th key of the row, whose quote is at line[i], and returns
// its column (-1 if none) and the index after it. It remembers the match in
// slot k for the next row.
func (d *Decoder) key(k int, line []byte, i int) (int, int, *RecordError) {
	j := scanKey(line, i+1)
	var key []byte
	raw := j < len(line) && line[j] == '"'
	if raw {
		key = line[i+1 : j]
		j++
	} else {
		var err *RecordError
		if key, j, d.buf, err = decodeString(line, i, d.buf); err != nil {
			return 0, 0, err
		}
	}
	c := d.lookup(key)
	if k < len(d.slots) {
		d.slots[k].remember(key, c, raw)
	}
	return c, j, nil
}

func (d *Decoder) lookup(key []byte) int {
	for c := range d.cols {
		if d.cols[c].name == string(key) {
			return c
		}
	}
	for c := range d.cols {
		if bytes.EqualFold(d.cols[c].nameB, key) {
			return c
		}
	}
	return -1
}

// value parses the value at line[i] into col's row d.n.
func (d *Decoder) value(col *column, line []byte, i int) (int, *RecordError) {
	if i >= len(line) {
		return 0, syntaxError(line, i, "")
	}
	c := line[i]
	if c == 'n' {
		if col.set == d.gen {
			col.set = 0
			d.nset--
		}
		return skipLiteral(line, i, "null")
	}
	switch col.kind {
	case kString:
		if c != '"' {
			return d.typeError(col, line, i, "a string")
		}
		// Fast path: ASCII without escapes is copied straight from the line.
		s, end := []byte(nil), scanPlain(line, i+1)
		if end < len(line) && line[end] == '"' {
			start := int(col.off[d.n])
			if n := end - (i + 1); n <= 16 && i+17 <= len(line) && start+16 <= len(col.dat) {
				// Short string: two word moves instead of a memmove call.
				// The bytes past its end land in spare capacity, which
				// the next value overwrites.
				binary.LittleEndian.PutUint64(col.dat[start:], binary.LittleEndian.Uint64(line[i+1:]))
				binary.LittleEndian.PutUint64(col.dat[start+8:], binary.LittleEndian.Uint64(line[i+9:]))
				col.off[d.n+1] = int32(start + n)
				d.isSet(col)
				return end + 1, nil
			}
			s, end = line[i+1:end], end+1
		} else {
			var err *RecordError
			if s, end, d.buf, err = decodeString(line, i, d.buf); err != nil {
				return 0, err
			}
		}
		start := int(col.off[d.n])
		e := start + len(s)
		if e > len(col.dat) {
			if e > math.MaxInt32 {
				return 0, fieldError(col, i, "string data of the batch exceeds 2 GiB; flush more often")
			}
			col.data.Reserve(max(e, 2*len(col.dat)))
			col.dat = col.data.Buf()
		}
		copy(col.dat[start:], s)
		col.off[d.n+1] = int32(e)
		d.isSet(col)
		return end, nil

	case kInt8, kInt16, kInt32, kInt64, kTimestamp:
		if c == '"' && col.kind == kTimestamp {
			return d.timestamp(col, line, i)
		}
		if c != '-' && (c < '0' || c > '9') {
			return d.typeError(col, line, i, "an integer")
		}
		v, end, ok := fastInt(line, i)
		if !ok {
			n, e, err := scanNumber(line, i)
			if err != nil {
				return 0, err
			}
			end = e
			var st int
			switch v, st = n.toInt(); st {
			case intFraction:
				return 0, fieldError(col, i, "expected an integer, found "+shown(line[i:end]))
			case intRange:
				return 0, d.rangeError(col, line, i, end)
			}
		}
		switch col.kind {
		case kInt64, kTimestamp:
			col.v8[d.n] = uint64(v)
		default:
			if v < col.lo || v > col.hi {
				return 0, d.rangeError(col, line, i, end)
			}
			switch col.kind {
			case kInt32:
				col.v4[d.n] = uint32(v)
			case kInt16:
				col.v2[d.n] = uint16(v)
			default:
				col.v1[d.n] = byte(v)
			}
		}
		d.isSet(col)
		return end, nil

	case kFloat64, kFloat32:
		if c != '-' && (c < '0' || c > '9') {
			return d.typeError(col, line, i, "a number")
		}
		if col.kind == kFloat64 {
			if f, end, ok := fastFloat(line, i); ok {
				col.v8[d.n] = math.Float64bits(f)
				d.isSet(col)
				return end, nil
			}
		}
		n, end, err := scanNumber(line, i)
		if err != nil {
			return 0, err
		}
		if col.kind == kFloat64 {
			f, ok := n.toFloat64(line[i:end])
			if !ok {
				return 0, d.rangeError(col, line, i, end)
			}
			col.v8[d.n] = math.Float64bits(f)
		} else {
			f, ok := n.toFloat32(line[i:end])
			if !ok {
				return 0, d.rangeError(col, line, i, end)
			}
			col.v4[d.n] = math.Float32bits(f)
		}
		d.isSet(col)
		return end, nil

	case kDecimal:
		return d.decimal(col, line, i)

	case kBool:
		var end int
		var err *RecordError
		switch c {
		case 't':
			end, err = skipLiteral(line, i, "true")
			bitutil.SetBit(col.v1, d.n)
		case 'f':
			end, err = skipLiteral(line, i, "false")
			bitutil.ClearBit(col.v1, d.n)
		default:
			return d.typeError(col, line, i, "true or false")
		}
		d.isSet(col)
		return end, err
	}
	panic("unreachable")
}

// timestamp parses a timestamp string at line[i] into col.
func (d *Decoder) timestamp(col *column, line []byte, i int) (int, *RecordError) {
	s, end, buf, err := decodeString(line, i, d.buf)
	d.buf = buf
	if err != nil {
		return 0, err
	}
	ms, ok := parseTimestamp(s)
	if !ok {
		return 0, fieldError(col, i, "expected a timestamp ('YYYY-MM-DD HH:MM:SS[.fff]', RFC 3339 or epoch ms), found "+shown(line[i:end]))
	}
	col.v8[d.n] = uint64(ms)
	d.isSet(col)
	return end, nil
}

func (d *Decoder) rangeError(col *column, line []byte, i, end int) *RecordError {
	return fieldError(col, i, fmt.Sprintf("%s out of range for %s", shown(line[i:end]), rangeName(col.kind)))
}

// typeError reports that the value at line[i] is not what col holds; if the
// value is not even valid JSON, that is reported instead.
func (d *Decoder) typeError(col *column, line []byte, i int, want string) (int, *RecordError) {
	end, err := skipValue(line, i, 1)
	if err != nil {
		return 0, err
	}
	return 0, fieldError(col, i, "expected "+want+", found "+shown(line[i:end]))
}

func fieldError(col *column, i int, reason string) *RecordError {
	return &RecordError{Column: i + 1, Field: col.name, Reason: reason}
}

func rangeName(k kind) string {
	switch k {
	case kInt8:
		return "int8"
	case kInt16:
		return "int16"
	case kInt32:
		return "int32"
	case kInt64:
		return "int64"
	case kFloat32:
		return "float32"
	case kFloat64:
		return "float64"
	case kTimestamp:
		return "timestamp"
	}
	return "?"
}

// isSet records that col holds a value in the current row.
func (d *Decoder) isSet(col *column) {
	if col.set != d.gen {
		col.set = d.gen
		d.nset++
	}
}

// commit makes row d.n part of the batch: columns without a value this row
// become null. In the common case (every column set, no nulls in the batch)
// there is nothing to write.
func (d *Decoder) commit() {
	if d.nset != len(d.cols) || d.nullCols != 0 {
		d.commitSlow()
	}
	d.n++
}

func (d *Decoder) commitSlow() {
	n := d.n
	for c := range d.cols {
		col := &d.cols[c]
		if col.set == d.gen {
			if col.nulls > 0 {
				col.bits[n>>3] |= 1 << (n & 7)
			}
			continue
		}
		if col.nulls == 0 {
			d.firstNull(col, n)
		}
		col.bits[n>>3] &^= 1 << (n & 7)
		col.nulls++
		// A null's value slot is zeroed: it may hold a rejected or
		// overridden value.
		switch col.kind {
		case kString:
			col.off[n+1] = col.off[n]
		case kBool:
			bitutil.ClearBit(col.v1, n)
		case kInt8:
			col.v1[n] = 0
		case kInt16:
			col.v2[n] = 0
		case kInt32, kFloat32:
			col.v4[n] = 0
		case kDecimal:
			col.v8[2*n], col.v8[2*n+1] = 0, 0
		default:
			col.v8[n] = 0
		}
	}
}
