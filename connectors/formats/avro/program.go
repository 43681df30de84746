package avro

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	hamba "github.com/hamba/avro/v2"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// opcode is one step of a compiled program.
type opcode uint8

const (
	opSkip     opcode = iota // skip a writer value (field not read)
	opUnion                  // read a branch index, run alts[index]
	opNull                   // the column's value is null; reads nothing
	opLong                   // long → int64 / timestamp in the same unit
	opInt                    // int → int64 (checked to be an int)
	opNarrow                 // int or long → int8/16/32/date32, range checked
	opTsMul                  // long × mul → timestamp (ms → us), overflow checked
	opTsDiv                  // long ÷ div, floored → timestamp (us → ms)
	opDouble                 // double → float64
	opFloat                  // float → float32
	opFloatF64               // float → float64
	opLongF64                // int or long → float64
	opLongF32                // int or long → float32
	opString                 // string or bytes → string, UTF-8 checked
	opEnum                   // enum → string (its symbol)
	opBool                   // boolean → bool
	opDecBytes               // bytes decimal → decimal128
	opDecFixed               // fixed decimal → decimal128
)

// op is one compiled operation. Programs are flat: one op per writer
// field, plus an opNull per table column the writer lacks.
type op struct {
	code   opcode
	col    *column
	name   string // the field, for errors
	alts   []op   // opUnion: one per writer branch
	skip   *skipper
	lo, hi int64 // opNarrow range
	mul    int64 // opTsMul / opTsDiv factor
	size   int   // opDecFixed size
	// opEnum: symbol k is syms[symOff[k]:symOff[k+1]]
	syms   []byte
	symOff []int32
	// opDecBytes/opDecFixed: the writer's scale is raised to the column's
	// by multiplying by scaleMul when scaleUp.
	scaleUp    bool
	scaleMul   decimal128.Num
	scaleLimit decimal128.Num // the largest magnitude that can be scaled up
}

// Writer is the compiled program for records written with one writer
// schema, resolved against the Decoder's table. It is bound to its
// Decoder; callers cache one per registry schema id.
type Writer struct {
	d   *Decoder
	ops []op
}

// Writer compiles writerSchema (Avro JSON) for AppendWriter, resolving it
// against the table as Avro schema resolution does with the reader schema
// SchemaFor(table): writer fields are matched to columns by name, or by
// one of the writer field's aliases; writer fields the table lacks are
// skipped; a column the writer lacks is NULL (its default), or, if NOT
// NULL, an error. A writer field whose type cannot be read into its column
// is an error naming both; see the package documentation for the
// conversions.
func (d *Decoder) Writer(writerSchema string) (*Writer, error) {
	s, err := hamba.ParseWithCache(writerSchema, "", &hamba.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro format: writer schema: %w", err)
	}
	rec, ok := deref(s).(*hamba.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro format: writer schema is a %s, not a record", s.Type())
	}
	c := compiler{named: map[string]*skipper{}}
	w := &Writer{d: d}
	matched := make([]string, d.schema.NumFields())
	for _, wf := range rec.Fields() {
		fc := d.match(wf)
		if fc < 0 {
			sk, err := c.skipper(wf.Type(), 0)
			if err != nil {
				return nil, fmt.Errorf("avro format: writer field %q: %w", wf.Name(), err)
			}
			w.ops = append(w.ops, op{code: opSkip, name: wf.Name(), skip: sk})
			continue
		}
		f := d.schema.Field(fc)
		if matched[fc] != "" {
			return nil, fmt.Errorf("avro format: writer fields %q and %q both match column %q", matched[fc], wf.Name(), f.Name)
		}
		matched[fc] = wf.Name()
		// A column that is not needed is still checked to be readable,
		// as it would be if it were.
		probe := column{name: f.Name, nullable: f.Nullable}
		probe.Init(f.Type)
		if probe.Kind == arrowcol.Decimal {
			t := f.Type.(*arrow.Decimal128Type)
			probe.prec, probe.scale = t.Precision, t.Scale
		}
		col := &probe
		if k := d.colOf[fc]; k >= 0 {
			col = &d.cols[k]
		}
		o, err := c.value(col, wf.Type())
		if err != nil {
			if wf.Name() != f.Name {
				return nil, fmt.Errorf("avro format: writer field %q (alias of column %q): %w", wf.Name(), f.Name, err)
			}
			return nil, fmt.Errorf("avro format: writer field %q: %w", wf.Name(), err)
		}
		if d.colOf[fc] < 0 {
			sk, err := c.skipper(wf.Type(), 0)
			if err != nil {
				return nil, fmt.Errorf("avro format: writer field %q: %w", wf.Name(), err)
			}
			o = op{code: opSkip, name: f.Name, skip: sk}
		}
		w.ops = append(w.ops, o)
	}
	for fc, f := range d.schema.Fields() {
		if matched[fc] != "" {
			continue
		}
		if !f.Nullable {
			return nil, fmt.Errorf("avro format: column %q is NOT NULL but the writer schema has no field %q, and a NOT NULL column has no default", f.Name, f.Name)
		}
		if k := d.colOf[fc]; k >= 0 {
			w.ops = append(w.ops, op{code: opNull, col: &d.cols[k], name: f.Name})
		}
	}
	return w, nil
}

// match is the schema column writer field wf is read into, -1 for none.
func (d *Decoder) match(wf *hamba.Field) int {
	for fc, f := range d.schema.Fields() {
		if f.Name == wf.Name() {
			return fc
		}
	}
	for _, a := range wf.Aliases() {
		for fc, f := range d.schema.Fields() {
			if f.Name == a {
				return fc
			}
		}
	}
	return -1
}

func deref(s hamba.Schema) hamba.Schema {
	if r, ok := s.(*hamba.RefSchema); ok {
		return r.Schema()
	}
	return s
}

type compiler struct {
	named map[string]*skipper // named types being or already compiled
}

// value compiles reading a writer value of type t into col.
func (c *compiler) value(col *column, t hamba.Schema) (op, error) {
	t = deref(t)
	if u, ok := t.(*hamba.UnionSchema); ok {
		o := op{code: opUnion, col: col, name: col.name}
		for k, bt := range u.Types() {
			bo, err := c.scalar(col, deref(bt))
			if err != nil {
				return op{}, fmt.Errorf("union branch %d: %w", k, err)
			}
			o.alts = append(o.alts, bo)
		}
		return o, nil
	}
	if t.Type() == hamba.Null && !col.nullable {
		return op{}, fmt.Errorf("type null (always null) cannot be read into NOT NULL column %q", col.name)
	}
	return c.scalar(col, t)
}

// scalar compiles reading a non-union writer value of type t into col.
func (c *compiler) scalar(col *column, t hamba.Schema) (op, error) {
	o := op{col: col, name: col.name}
	var logical hamba.LogicalType
	var dec *hamba.DecimalLogicalSchema
	switch s := t.(type) {
	case *hamba.PrimitiveSchema:
		if l := s.Logical(); l != nil {
			logical = l.Type()
			dec, _ = l.(*hamba.DecimalLogicalSchema)
		}
	case *hamba.FixedSchema:
		if l := s.Logical(); l != nil {
			logical = l.Type()
			dec, _ = l.(*hamba.DecimalLogicalSchema)
		}
	}
	typ := t.Type()
	switch {
	case typ == hamba.Null:
		o.code = opNull
		return o, nil
	case col.Kind == arrowcol.String && (typ == hamba.String || typ == hamba.Bytes) && logical == "":
		o.code = opString
		return o, nil
	case col.Kind == arrowcol.String && typ == hamba.String: // uuid and the like
		o.code = opString
		return o, nil
	case col.Kind == arrowcol.String && typ == hamba.Enum:
		o.code = opEnum
		for _, sym := range t.(*hamba.EnumSchema).Symbols() {
			o.symOff = append(o.symOff, int32(len(o.syms)))
			o.syms = append(o.syms, sym...)
		}
		o.symOff = append(o.symOff, int32(len(o.syms)))
		return o, nil
	case col.Kind == arrowcol.Bool && typ == hamba.Boolean:
		o.code = opBool
		return o, nil
	case col.Kind == arrowcol.Int64 && typ == hamba.Long:
		o.code = opLong
		return o, nil
	case col.Kind == arrowcol.Int64 && typ == hamba.Int && logical == "":
		o.code = opInt
		return o, nil
	case (col.Kind == arrowcol.Int8 || col.Kind == arrowcol.Int16 || col.Kind == arrowcol.Int32) && (typ == hamba.Int || typ == hamba.Long) && logical == "":
		o.code = opNarrow
		switch col.Kind {
		case arrowcol.Int8:
			o.lo, o.hi = math.MinInt8, math.MaxInt8
		case arrowcol.Int16:
			o.lo, o.hi = math.MinInt16, math.MaxInt16
		default:
			o.lo, o.hi = math.MinInt32, math.MaxInt32
		}
		return o, nil
	case col.Kind == arrowcol.Date && typ == hamba.Int && logical == hamba.Date:
		o.code, o.lo, o.hi = opNarrow, math.MinInt32, math.MaxInt32
		return o, nil
	case col.Kind == arrowcol.Float64 && typ == hamba.Double:
		o.code = opDouble
		return o, nil
	case col.Kind == arrowcol.Float64 && typ == hamba.Float:
		o.code = opFloatF64
		return o, nil
	case col.Kind == arrowcol.Float64 && (typ == hamba.Int || typ == hamba.Long) && logical == "":
		o.code = opLongF64
		return o, nil
	case col.Kind == arrowcol.Float32 && typ == hamba.Float:
		o.code = opFloat
		return o, nil
	case col.Kind == arrowcol.Float32 && (typ == hamba.Int || typ == hamba.Long) && logical == "":
		o.code = opLongF32
		return o, nil
	case (col.Kind == arrowcol.TimestampMs || col.Kind == arrowcol.TimestampUs) && typ == hamba.Long:
		micros := false
		switch logical {
		case hamba.TimestampMicros, hamba.LocalTimestampMicros:
			micros = true
		case "", hamba.TimestampMillis, hamba.LocalTimestampMillis:
			// A plain long is epoch milliseconds, Clink's event time.
		default:
			return op{}, fmt.Errorf("cannot read Avro long %s into %s column %q", logical, col.Type, col.name)
		}
		switch {
		case micros == (col.Kind == arrowcol.TimestampUs):
			o.code = opLong
		case micros:
			o.code, o.mul = opTsDiv, 1000
		default:
			o.code, o.mul = opTsMul, 1000
		}
		return o, nil
	case col.Kind == arrowcol.Decimal && dec != nil && (typ == hamba.Bytes || typ == hamba.Fixed):
		ws := int32(dec.Scale())
		if ws > col.scale {
			return op{}, fmt.Errorf("cannot read Avro decimal(%d,%d) into %s column %q: its scale is larger", dec.Precision(), ws, col.Type, col.name)
		}
		if ws < col.scale {
			o.scaleUp, o.scaleMul = true, decimal128.GetScaleMultiplier(int(col.scale-ws))
			o.scaleLimit, _ = decimal128.GetMaxValue(col.prec).Div(o.scaleMul)
		}
		o.code = opDecBytes
		if typ == hamba.Fixed {
			o.code, o.size = opDecFixed, t.(*hamba.FixedSchema).Size()
		}
		return o, nil
	}
	return op{}, fmt.Errorf("cannot read Avro %s into %s column %q", describe(t, logical), col.Type, col.name)
}

func describe(t hamba.Schema, logical hamba.LogicalType) string {
	if logical != "" {
		return fmt.Sprintf("%s (%s)", t.Type(), logical)
	}
	return string(t.Type())
}
