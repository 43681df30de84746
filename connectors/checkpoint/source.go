package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	chk "github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Source emits the state rows of a checkpoint's parts, one batch per
// record batch of a part, and ends. With parallelism p, subtask i reads
// the parts at positions i, i+p, i+2p, ... of the manifest.
type Source struct {
	table *connectors.Table
	ckpt  *chk.Checkpoint
	sel   stateio.Selection
	rows  atomic.Int64
}

var (
	_ engine.Source        = (*Source)(nil)
	_ engine.StatsReporter = (*Source)(nil)
)

// Stats reports the rows emitted.
func (s *Source) Stats() map[string]int64 { return map[string]int64{"rows_read": s.rows.Load()} }

// Run reads the parts and emits their rows.
func (s *Source) Run(ctx context.Context, emit func(engine.Message) error) error {
	rt := s.table.Runtime
	mem := rt.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	parts, err := s.sel.Parts(s.ckpt)
	if err != nil {
		return s.errorf("%w", err)
	}
	for k, info := range parts {
		if rt.Parallelism > 1 && k%rt.Parallelism != rt.Subtask {
			continue
		}
		p, err := s.ckpt.ReadPart(info.Operator, info.Subtask)
		if err != nil {
			return s.errorf("%w", err)
		}
		err = s.emitPart(ctx, mem, p, emit)
		p.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Source) errorf(format string, args ...any) error {
	return fmt.Errorf("checkpoint source '%s': "+format, append([]any{s.table.Name}, args...)...)
}

func (s *Source) emitPart(ctx context.Context, mem memory.Allocator, p *chk.Part, emit func(engine.Message) error) error {
	cols, err := s.columnsOf(p)
	if err != nil {
		return err
	}
	for _, rec := range p.Records {
		if err := ctx.Err(); err != nil {
			return err
		}
		var sel []int32
		if s.sel.Slot != "" {
			slots := rec.Column(0).(*array.String)
			sel = make([]int32, 0, rec.NumRows())
			for i := 0; i < int(rec.NumRows()); i++ {
				if slots.Value(i) == s.sel.Slot {
					sel = append(sel, int32(i))
				}
			}
			if len(sel) == 0 {
				continue
			}
		}
		out, err := s.convert(mem, p, rec, cols)
		if err != nil {
			return err
		}
		b := vector.New(out)
		b.Sel = sel
		s.rows.Add(int64(b.Len()))
		if err := emit(engine.Message{Kind: engine.KindData, Batch: b}); err != nil {
			return err
		}
	}
	return nil
}

// Where a table column comes from in a part.
const (
	fromNull     = -1 // the part has no such column
	fromOperator = -2
	fromSubtask  = -3
)

// columnsOf maps each table column to a column of p (by name, exact or
// else case-insensitive), to operator or subtask, or to nulls.
func (s *Source) columnsOf(p *chk.Part) ([]int, error) {
	fields := s.table.Schema.Fields()
	out := make([]int, len(fields))
	for i, f := range fields {
		out[i] = fromNull
		if idx := p.Schema.FieldIndices(f.Name); len(idx) > 0 {
			out[i] = idx[0]
		} else {
			for j, pf := range p.Schema.Fields() {
				if strings.EqualFold(pf.Name, f.Name) {
					out[i] = j
					break
				}
			}
		}
		if out[i] == fromNull {
			switch strings.ToLower(f.Name) {
			case ColOperator:
				out[i] = fromOperator
			case ColSubtask:
				out[i] = fromSubtask
			}
		}
		if out[i] >= 0 && !convertible(p.Schema.Field(out[i]).Type, f.Type) {
			sqlt, _ := sqlType(p.Schema.Field(out[i]).Type)
			hint := "it cannot be read in SQL"
			if sqlt != "" {
				hint = "declare it " + sqlt
			}
			return nil, s.errorf("%s: column %s is %s, the table declares %s; %s", p.Path, f.Name, p.Schema.Field(out[i]).Type, f.Type, hint)
		}
		switch {
		case out[i] == fromOperator && f.Type.ID() != arrow.STRING:
			return nil, s.errorf("column %s must be STRING", f.Name)
		case out[i] == fromSubtask && f.Type.ID() != arrow.INT32:
			return nil, s.errorf("column %s must be INT", f.Name)
		}
	}
	return out, nil
}

// convertible reports whether convert turns an array of type from into
// type to.
func convertible(from, to arrow.DataType) bool {
	if arrow.TypeEqual(from, to) {
		return true
	}
	want, ok := sqlType(from)
	if !ok {
		return false
	}
	got, ok := sqlType(to)
	return ok && got == want
}

// convert builds the batch of one record: the table's columns from the
// part's.
func (s *Source) convert(mem memory.Allocator, p *chk.Part, rec arrow.RecordBatch, cols []int) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	out := make([]arrow.Array, len(cols))
	release := func() {
		for _, a := range out {
			if a != nil {
				a.Release()
			}
		}
	}
	for i, c := range cols {
		to := s.table.Schema.Field(i).Type
		switch c {
		case fromNull:
			out[i] = array.MakeArrayOfNull(mem, to, n)
		case fromOperator:
			b := array.NewStringBuilder(mem)
			for j := 0; j < n; j++ {
				b.Append(p.Operator)
			}
			out[i] = b.NewArray()
			b.Release()
		case fromSubtask:
			b := array.NewInt32Builder(mem)
			for j := 0; j < n; j++ {
				b.Append(int32(p.Subtask))
			}
			out[i] = b.NewArray()
			b.Release()
		default:
			a, err := convertArray(mem, rec.Column(c), to)
			if err != nil {
				release()
				return nil, s.errorf("%s: column %s: %w", p.Path, s.table.Schema.Field(i).Name, err)
			}
			out[i] = a
		}
	}
	r := array.NewRecordBatch(s.table.Schema, out, int64(n))
	release()
	return r, nil
}

// convertArray returns a as type to: the same array when the types are
// equal, else the values converted (integers widened, UBIGINT to
// DECIMAL(20, 0), timestamps to milliseconds in UTC, truncating finer
// units toward minus infinity).
func convertArray(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), to) {
		a.Retain()
		return a, nil
	}
	b := array.NewBuilder(mem, to)
	defer b.Release()
	n := a.Len()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		switch src := a.(type) {
		case *array.Uint8:
			b.(*array.Int16Builder).Append(int16(src.Value(i)))
		case *array.Uint16:
			b.(*array.Int32Builder).Append(int32(src.Value(i)))
		case *array.Uint32:
			b.(*array.Int64Builder).Append(int64(src.Value(i)))
		case *array.Uint64:
			b.(*array.Decimal128Builder).Append(decimal128.FromU64(src.Value(i)))
		case *array.LargeString:
			b.(*array.StringBuilder).Append(src.Value(i))
		case *array.Timestamp:
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(toMillis(int64(src.Value(i)), src.DataType().(*arrow.TimestampType).Unit)))
		default:
			return nil, fmt.Errorf("cannot convert %s to %s", a.DataType(), to)
		}
	}
	return b.NewArray(), nil
}

func toMillis(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1000
	case arrow.Microsecond:
		return floorDiv(v, 1000)
	case arrow.Nanosecond:
		return floorDiv(v, 1000000)
	}
	return v
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
