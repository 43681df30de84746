package json

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// Options tunes a Decoder. Every accepted input form (timestamps as epoch
// ms, 'YYYY-MM-DD HH:MM:SS[.fff]' or RFC 3339) is always on, so no format
// switch is needed. Flink's 'json.*' options belong here when connectors
// need them.
type Options struct {
	// Needed, when set, marks the columns the query reads (projection
	// pushdown). The fields of the others are skipped without being
	// converted: checked to be well-formed JSON of the column's kind (a
	// number for a numeric column, a string for a STRING, ...; a string
	// for a BIGINT is still an error) but not for range or form (an
	// integer column's 1.5 or 1e30 passes), and their columns come out
	// all NULL.
	Needed []bool
	// Required marks the columns that must hold a value: a record whose
	// field is missing or null is rejected (a *RecordError naming the
	// field) rather than decoded with a NULL. Sources mark their
	// event-time column, as Flink fails on a NULL rowtime. A required
	// column is always decoded, whatever Needed says.
	Required []bool
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
		if k := arrowcol.KindOf(f.Type); k == arrowcol.Invalid || k == arrowcol.Date || k == arrowcol.TimestampUs {
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
	arrowcol.Column
	name   string
	nameB  []byte
	lo, hi int64 // range of an integer kind

	prec, scale int32 // of a decimal

	// set == Decoder.gen when the current row holds a non-null value (a
	// missing field and JSON null both leave the row null).
	set uint32
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
	schema *arrow.Schema
	mem    memory.Allocator
	cols   []column // the decoded columns
	// With projection pushdown, cols are the needed columns only: pos maps
	// each to its schema column, names are every schema column's name
	// with colOf its decoded column (or -2-k for skips[k], a skipped one
	// whose values are only checked for their kind); the batch gives
	// skipped columns all-NULL arrays.
	pos      []int
	names    [][]byte
	colOf    []int
	skips    []column
	batch    arrowcol.Batch
	slots    []slot
	buf      []byte // strings of the current row that needed unescaping
	n        int    // rows buffered
	gen      uint32 // current row's stamp for column.set
	nset     int    // columns set in the current row
	nullCols int    // columns with a null in the batch so far
	required []int  // decoded columns that must hold a value
}

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
		slots:  make([]slot, 2*schema.NumFields()+8),
	}
	for k := range d.slots {
		d.slots[k].col = -1
	}
	for c, f := range schema.Fields() {
		d.names = append(d.names, []byte(f.Name))
		required := c < len(opts.Required) && opts.Required[c]
		if required {
			d.required = append(d.required, len(d.pos))
		}
		if opts.Needed != nil && c < len(opts.Needed) && !opts.Needed[c] && !required {
			d.colOf = append(d.colOf, -2-len(d.skips))
			skip := column{name: f.Name}
			skip.Init(f.Type)
			d.skips = append(d.skips, skip)
			continue
		}
		d.colOf = append(d.colOf, len(d.pos))
		d.pos = append(d.pos, c)
	}
	d.cols = make([]column, len(d.pos))
	for c, fc := range d.pos {
		f := schema.Field(fc)
		col := &d.cols[c]
		col.name = f.Name
		col.nameB = []byte(f.Name)
		col.Init(f.Type)
		switch col.Kind {
		case arrowcol.Int8:
			col.lo, col.hi = -1<<7, 1<<7-1
		case arrowcol.Int16:
			col.lo, col.hi = -1<<15, 1<<15-1
		case arrowcol.Int32:
			col.lo, col.hi = -1<<31, 1<<31-1
		case arrowcol.Decimal:
			t := f.Type.(*arrow.Decimal128Type)
			col.prec, col.scale = t.Precision, t.Scale
		}
	}
	bufs := make([]*arrowcol.Column, len(d.cols))
	for c := range d.cols {
		bufs[c] = &d.cols[c].Column
	}
	d.batch.Init(schema, mem, bufs, d.pos)
	return d
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

// Append decodes one line holding one JSON object and appends it as a row.
// Whitespace (including a trailing "\r\n") may surround every token. On
// error it appends nothing and returns a *RecordError. A blank line is an
// error ("empty line"); callers that allow blank lines skip them first.
func (d *Decoder) Append(line []byte) error {
	if d.n == d.batch.Cap {
		d.batch.Grow(2 * d.batch.Cap)
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
	if d.nset != len(d.cols) {
		for _, c := range d.required {
			if col := &d.cols[c]; col.set != d.gen {
				return &RecordError{Field: col.name, Reason: "null or missing, and it must hold a value (the event-time column)"}
			}
		}
	}
	d.commit()
	return nil
}

// noMatch: the key did not match its slot (column codes are >= -2-len(skips)).
const noMatch = math.MinInt32

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
			c := noMatch
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
			if c == noMatch {
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
			if c <= -2 {
				i, err = d.skipKind(&d.skips[-2-c], line, i)
			} else if c < 0 {
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

// lookup is key's decoded column, -1 for none, -2-k for skips[k].
func (d *Decoder) lookup(key []byte) int {
	for fc, name := range d.names {
		if string(name) == string(key) {
			return d.colOf[fc]
		}
	}
	for fc, name := range d.names {
		if bytes.EqualFold(name, key) {
			return d.colOf[fc]
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
	switch col.Kind {
	case arrowcol.String:
		if c != '"' {
			return d.typeError(col, line, i, "a string")
		}
		// Fast path: ASCII without escapes is copied straight from the line.
		s, end := []byte(nil), scanPlain(line, i+1)
		if end < len(line) && line[end] == '"' {
			start := int(col.Off[d.n])
			if n := end - (i + 1); n <= 16 && i+17 <= len(line) && start+16 <= len(col.Dat) {
				// Short string: two word moves instead of a memmove call.
				// The bytes past its end land in spare capacity, which
				// the next value overwrites.
				binary.LittleEndian.PutUint64(col.Dat[start:], binary.LittleEndian.Uint64(line[i+1:]))
				binary.LittleEndian.PutUint64(col.Dat[start+8:], binary.LittleEndian.Uint64(line[i+9:]))
				col.Off[d.n+1] = int32(start + n)
				d.isSet(col)
				return end + 1, nil
			}
			s, end = line[i+1:end], end+1
		} else {
			var err *RecordError
			if s, end, d.buf, err = decodeString(line, i, d.buf); err != nil {
				if !err.syntax {
					err.Field = col.name
				}
				return 0, err
			}
		}
		start := int(col.Off[d.n])
		e := start + len(s)
		if e > len(col.Dat) {
			if e > math.MaxInt32 {
				return 0, fieldError(col, i, "string data of the batch exceeds 2 GiB; flush more often")
			}
			col.Data.Reserve(max(e, 2*len(col.Dat)))
			col.Dat = col.Data.Buf()
		}
		copy(col.Dat[start:], s)
		col.Off[d.n+1] = int32(e)
		d.isSet(col)
		return end, nil

	case arrowcol.Int8, arrowcol.Int16, arrowcol.Int32, arrowcol.Int64, arrowcol.TimestampMs:
		if c == '"' && col.Kind == arrowcol.TimestampMs {
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
		switch col.Kind {
		case arrowcol.Int64, arrowcol.TimestampMs:
			col.V8[d.n] = uint64(v)
		default:
			if v < col.lo || v > col.hi {
				return 0, d.rangeError(col, line, i, end)
			}
			switch col.Kind {
			case arrowcol.Int32:
				col.V4[d.n] = uint32(v)
			case arrowcol.Int16:
				col.V2[d.n] = uint16(v)
			default:
				col.V1[d.n] = byte(v)
			}
		}
		d.isSet(col)
		return end, nil

	case arrowcol.Float64, arrowcol.Float32:
		if c != '-' && (c < '0' || c > '9') {
			return d.typeError(col, line, i, "a number")
		}
		if col.Kind == arrowcol.Float64 {
			if f, end, ok := fastFloat(line, i); ok {
				col.V8[d.n] = math.Float64bits(f)
				d.isSet(col)
				return end, nil
			}
		}
		n, end, err := scanNumber(line, i)
		if err != nil {
			return 0, err
		}
		if col.Kind == arrowcol.Float64 {
			f, ok := n.toFloat64(line[i:end])
			if !ok {
				return 0, d.rangeError(col, line, i, end)
			}
			col.V8[d.n] = math.Float64bits(f)
		} else {
			f, ok := n.toFloat32(line[i:end])
			if !ok {
				return 0, d.rangeError(col, line, i, end)
			}
			col.V4[d.n] = math.Float32bits(f)
		}
		d.isSet(col)
		return end, nil

	case arrowcol.Decimal:
		return d.decimal(col, line, i)

	case arrowcol.Bool:
		var end int
		var err *RecordError
		switch c {
		case 't':
			end, err = skipLiteral(line, i, "true")
			bitutil.SetBit(col.V1, d.n)
		case 'f':
			end, err = skipLiteral(line, i, "false")
			bitutil.ClearBit(col.V1, d.n)
		default:
			return d.typeError(col, line, i, "true or false")
		}
		d.isSet(col)
		return end, err
	}
	panic("unreachable")
}

// skipKind skips the value at line[i] of a skipped column after checking
// that it is JSON of the column's kind (or null).
func (d *Decoder) skipKind(col *column, line []byte, i int) (int, *RecordError) {
	if i >= len(line) {
		return 0, syntaxError(line, i, "")
	}
	c := line[i]
	number := c == '-' || c >= '0' && c <= '9'
	switch {
	case c == 'n':
		return skipLiteral(line, i, "null")
	case col.Kind == arrowcol.String && c != '"':
		return d.typeError(col, line, i, "a string")
	case col.Kind == arrowcol.Bool && c != 't' && c != 'f':
		return d.typeError(col, line, i, "true or false")
	case (col.Kind == arrowcol.Float32 || col.Kind == arrowcol.Float64 || col.Kind == arrowcol.Decimal && c != '"') && !number:
		return d.typeError(col, line, i, "a number")
	case (col.Kind == arrowcol.Int8 || col.Kind == arrowcol.Int16 || col.Kind == arrowcol.Int32 || col.Kind == arrowcol.Int64 || col.Kind == arrowcol.TimestampMs && c != '"') && !number:
		return d.typeError(col, line, i, "an integer")
	}
	return skipValue(line, i, 1)
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
	col.V8[d.n] = uint64(ms)
	d.isSet(col)
	return end, nil
}

func (d *Decoder) rangeError(col *column, line []byte, i, end int) *RecordError {
	return fieldError(col, i, fmt.Sprintf("%s out of range for %s", shown(line[i:end]), rangeName(col.Kind)))
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

func rangeName(k arrowcol.Kind) string {
	switch k {
	case arrowcol.Int8:
		return "int8"
	case arrowcol.Int16:
		return "int16"
	case arrowcol.Int32:
		return "int32"
	case arrowcol.Int64:
		return "int64"
	case arrowcol.Float32:
		return "float32"
	case arrowcol.Float64:
		return "float64"
	case arrowcol.TimestampMs:
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
			col.SetValid(n)
			continue
		}
		if col.SetNull(n, d.batch.Cap) {
			d.nullCols++
		}
		col.Nulls++
	}
}
