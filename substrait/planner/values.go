package planner

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/vector"
)

// values plans a ReadRel over a virtual table (VALUES, or SELECT without
// FROM): a bounded source emitting the rows once.
func (b *builder) values(rd *pb.ReadRel, vt *pb.ReadRel_VirtualTable) (*chain, error) {
	schema, err := substrait.ArrowSchema(rd.GetBaseSchema())
	if err != nil {
		return nil, fmt.Errorf("VALUES: %w", err)
	}
	rows := vt.GetExpressions()
	if len(vt.GetValues()) > 0 {
		return nil, fmt.Errorf("VALUES: literal-struct rows are not supported; use expressions")
	}
	empty := arrow.NewSchema(nil, nil)
	cols := make([][]kernels.Expr, schema.NumFields())
	for r, row := range rows {
		if len(row.GetFields()) != schema.NumFields() {
			return nil, fmt.Errorf("VALUES row %d has %d values for %d columns", r+1, len(row.GetFields()), schema.NumFields())
		}
		for c, f := range row.GetFields() {
			e, err := b.expr(f, empty)
			if err != nil {
				return nil, fmt.Errorf("VALUES row %d: %w", r+1, err)
			}
			if !arrow.TypeEqual(e.Type(), schema.Field(c).Type) {
				if e, err = kernels.Cast(e, schema.Field(c).Type); err != nil {
					return nil, fmt.Errorf("VALUES row %d: %w", r+1, err)
				}
			}
			cols[c] = append(cols[c], e)
		}
	}
	src := &valuesSource{schema: schema, cols: cols, rows: len(rows), mem: b.env.Runtime.Mem, subtask: b.env.Runtime.Subtask}
	c := &chain{source: src, schema: schema, sourceName: "values", sourceSig: sourceSig("values", "values", b.statement)}
	return c, b.emit(c, rd.GetCommon())
}

// valuesSource emits constant rows once, then ends.
type valuesSource struct {
	schema *arrow.Schema
	cols   [][]kernels.Expr // per column, per row
	rows   int
	mem    memory.Allocator
	// subtask: at parallelism > 1 only subtask 0 emits the rows.
	subtask int
	emitted bool // the rows went out (checkpointed)
}

func (v *valuesSource) Run(ctx context.Context, emit func(engine.Message) error) error {
	if v.subtask > 0 || v.emitted {
		return nil // the rows come from subtask 0, once
	}
	one := vector.New(array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1))
	defer one.Release()
	arrs := make([]arrow.Array, len(v.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for c, col := range v.cols {
		bld := array.NewBuilder(v.mem, v.schema.Field(c).Type)
		for _, e := range col {
			a, err := e.Eval(one, v.mem)
			if err != nil {
				bld.Release()
				return fmt.Errorf("VALUES: %w", err)
			}
			if err := appendFrom(bld, a); err != nil {
				a.Release()
				bld.Release()
				return err
			}
			a.Release()
		}
		arrs[c] = bld.NewArray()
		bld.Release()
	}
	rec := array.NewRecordBatch(v.schema, arrs, int64(v.rows))
	if err := emit(engine.Message{Kind: engine.KindData, Batch: vector.New(rec)}); err != nil {
		return err
	}
	v.emitted = true
	return nil
}

// appendFrom appends the single value of a one-row array.
func appendFrom(bld array.Builder, a arrow.Array) error {
	if a.IsNull(0) {
		bld.AppendNull()
		return nil
	}
	return bld.AppendValueFromString(a.ValueStr(0))
}

// valuesSlots: the VALUES source's state is whether it emitted its rows.
var valuesSlots = []checkpoint.Slot{{Name: "values", Raw: true, Values: []arrow.Field{
	{Name: "emitted", Type: arrow.FixedWidthTypes.Boolean}}}}

// SetBarriers: the VALUES source emits all its rows at once and ends; a
// checkpoint taken before that finds it not started, after it finished.
func (v *valuesSource) SetBarriers(*engine.Barriers) {}

// SnapshotState records whether the rows were emitted (the runtime
// snapshots a finished source after its Run returned).
func (v *valuesSource) SnapshotState(s *engine.Snapshot) error {
	p, err := s.Open(valuesSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(s.Mem, p.Schema())
	defer b.Release()
	b.Raw("values")
	b.Value("emitted").(*array.BooleanBuilder).Append(v.emitted)
	return p.WriteRows(b)
}

// RestoreState: rows emitted before the checkpoint are not emitted again.
func (v *valuesSource) RestoreState(r *engine.Restore) error {
	for _, part := range r.Parts {
		for _, rec := range part.Records {
			if c, ok := checkpoint.Column(rec, "emitted").(*array.Boolean); ok {
				for i := 0; i < c.Len(); i++ {
					v.emitted = v.emitted || c.Value(i)
				}
			}
		}
	}
	return nil
}
