package iceberg

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// icebergType is the Iceberg type of a Clink column: BIGINT long, INT
// (and SMALLINT, TINYINT) int, DOUBLE double, FLOAT float, VARCHAR
// string, BOOLEAN boolean, DECIMAL(p, s) decimal(p, s), DATE date and
// TIMESTAMP(3) timestamp (without zone: Flink's TIMESTAMP; the values are
// UTC and stored in microseconds).
func icebergType(dt arrow.DataType) (ib.Type, error) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return ib.PrimitiveTypes.Bool, nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type:
		return ib.PrimitiveTypes.Int32, nil
	case *arrow.Int64Type:
		return ib.PrimitiveTypes.Int64, nil
	case *arrow.Float32Type:
		return ib.PrimitiveTypes.Float32, nil
	case *arrow.Float64Type:
		return ib.PrimitiveTypes.Float64, nil
	case *arrow.StringType, *arrow.LargeStringType:
		return ib.PrimitiveTypes.String, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return ib.PrimitiveTypes.Binary, nil
	case *arrow.Decimal128Type:
		return ib.DecimalTypeOf(int(t.Precision), int(t.Scale)), nil
	case *arrow.Date32Type:
		return ib.PrimitiveTypes.Date, nil
	case *arrow.TimestampType:
		return ib.PrimitiveTypes.Timestamp, nil
	}
	return nil, fmt.Errorf("type %s has no Iceberg type", dt)
}

// newSchema is the schema of a table created for the Clink table: its
// columns in order, all optional, ids from 1.
func newSchema(s *arrow.Schema) (*ib.Schema, error) {
	fields := make([]ib.NestedField, s.NumFields())
	for i, f := range s.Fields() {
		t, err := icebergType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		fields[i] = ib.NestedField{ID: i + 1, Name: f.Name, Type: t}
	}
	return ib.NewSchema(0, fields...), nil
}

// writable reports whether a Clink column of type src can be written into
// an Iceberg column of type dst: the same type, or one Iceberg promotes
// to (int to long, float to double, a wider decimal of the same scale),
// or a timestamp into timestamptz.
func writable(src arrow.DataType, dst ib.Type) bool {
	want, err := icebergType(src)
	if err != nil {
		return false
	}
	if want.Equals(dst) {
		return true
	}
	switch w := want.(type) {
	case ib.Int32Type:
		return dst.Equals(ib.PrimitiveTypes.Int64)
	case ib.Float32Type:
		return dst.Equals(ib.PrimitiveTypes.Float64)
	case ib.TimestampType:
		return dst.Equals(ib.PrimitiveTypes.TimestampTz)
	case ib.DecimalType:
		d, ok := dst.(ib.DecimalType)
		return ok && d.Scale() == w.Scale() && d.Precision() >= w.Precision()
	}
	return false
}

// layout maps a Clink table's batches onto the Iceberg table's columns.
type layout struct {
	file *arrow.Schema // the table's schema in Arrow, with Parquet field ids
	src  []int         // per file column: the Clink column, or -1 (nulls)
	req  []bool        // per file column: required (no nulls allowed)
}

// newLayout matches the Clink columns to the table's by name (exactly,
// else ignoring case). Every Clink column must have a writable table
// column; table columns without a Clink column are written as nulls and
// must be optional.
func newLayout(clink *arrow.Schema, sc *ib.Schema) (*layout, error) {
	file, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, err
	}
	l := &layout{file: file, src: make([]int, file.NumFields()), req: make([]bool, file.NumFields())}
	for i := range l.src {
		l.src[i] = -1
	}
	fields := sc.Fields()
	pos := map[int]int{} // field id -> file column
	for i, f := range fields {
		pos[f.ID] = i
		l.req[i] = f.Required
	}
	used := map[int]string{}
	for ci, cf := range clink.Fields() {
		f, ok := sc.FindFieldByName(cf.Name)
		if !ok {
			f, ok = sc.FindFieldByNameCaseInsensitive(cf.Name)
		}
		i, top := pos[f.ID]
		if !ok || !top {
			return nil, fmt.Errorf("column %s is not a column of the Iceberg table (its columns: %s)", cf.Name, names(fields))
		}
		if prev, dup := used[i]; dup {
			return nil, fmt.Errorf("columns %s and %s both match Iceberg column %s", prev, cf.Name, f.Name)
		}
		used[i] = cf.Name
		if !writable(cf.Type, f.Type) {
			return nil, fmt.Errorf("column %s (%s) cannot be written into Iceberg column %s of type %s", cf.Name, cf.Type, f.Name, f.Type)
		}
		l.src[i] = ci
	}
	for i, f := range fields {
		if l.src[i] < 0 && f.Required {
			return nil, fmt.Errorf("the Iceberg table's column %s is required, and the Clink table has no column of that name", f.Name)
		}
	}
	return l, nil
}

func names(fields []ib.NestedField) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return strings.Join(out, ", ")
}

// convert returns rec's rows in the file's columns and types (every row
// of rec is live).
func (l *layout) convert(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, l.file.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	n := int(rec.NumRows())
	for i, f := range l.file.Fields() {
		if l.src[i] < 0 {
			cols[i] = array.MakeArrayOfNull(mem, f.Type, n)
			continue
		}
		col := rec.Column(l.src[i])
		if l.req[i] && col.NullN() > 0 {
			return nil, fmt.Errorf("column %s: a NULL value for a required Iceberg column", f.Name)
		}
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
			cols[i] = col
			continue
		}
		out, err := compute.CastArray(compute.WithAllocator(ctx, mem), col, compute.SafeCastOptions(f.Type))
		if err != nil {
			return nil, fmt.Errorf("column %s: %s to %s: %w", f.Name, col.DataType(), f.Type, err)
		}
		cols[i] = out
	}
	return array.NewRecordBatch(l.file, cols, int64(n)), nil
}
