package op

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// Project computes output columns from the live rows. Column references are
// zero-copy; the selection vector and row watermarks carry over unchanged.
type Project struct {
	Exprs  []kernels.Expr
	Schema *arrow.Schema
	Mem    memory.Allocator
}

var _ Operator = (*Project)(nil)

// NewProject names the outputs.
func NewProject(exprs []kernels.Expr, names []string, mem memory.Allocator) *Project {
	fields := make([]arrow.Field, len(exprs))
	for i, e := range exprs {
		fields[i] = arrow.Field{Name: names[i], Type: e.Type(), Nullable: true}
	}
	return &Project{Exprs: exprs, Schema: arrow.NewSchema(fields, nil), Mem: mem}
}

// Process evaluates every expression.
func (p *Project) Process(b *vector.Batch, out Output) error {
	cols := make([]arrow.Array, len(p.Exprs))
	for i, e := range p.Exprs {
		c, err := e.Eval(b, p.Mem)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			b.Release()
			if name := p.Schema.Field(i).Name; !strings.HasPrefix(name, "$") {
				return fmt.Errorf("column %s: %w", name, err)
			}
			return err
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(p.Schema, cols, int64(b.NumRows()))
	for _, c := range cols {
		c.Release()
	}
	nb := &vector.Batch{Rec: rec, Sel: b.Sel, RowWatermark: b.RowWatermark, Kinds: b.Kinds}
	b.Release()
	return out.Emit(nb)
}

// Rename gives a batch's columns the names a sink expects (INSERT maps
// columns by position); the columns themselves are shared.
type Rename struct {
	Schema *arrow.Schema
}

// Process swaps the schema.
func (r *Rename) Process(b *vector.Batch, out Output) error {
	cols := b.Rec.Columns()
	rec := array.NewRecordBatch(r.Schema, cols, b.Rec.NumRows())
	nb := &vector.Batch{Rec: rec, Sel: b.Sel, RowWatermark: b.RowWatermark, Kinds: b.Kinds}
	b.Release()
	return out.Emit(nb)
}

// Stateless: a projection keeps nothing between batches.
func (p *Project) Stateless() {}

// Stateless: a rename keeps nothing between batches.
func (r *Rename) Stateless() {}

// OutputColumn is the first output that references input column c.
func (p *Project) OutputColumn(c int) int {
	for o, e := range p.Exprs {
		if i, ok := kernels.ColIndex(e); ok && i == c {
			return o
		}
	}
	return -1
}

// OutputColumn: a rename keeps every column in place.
func (r *Rename) OutputColumn(c int) int { return c }

var (
	_ Passthrough = (*Project)(nil)
	_ Passthrough = (*Rename)(nil)
)
