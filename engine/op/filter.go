package op

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// Filter keeps the rows for which a predicate is TRUE by shrinking the
// batch's selection vector; no column is copied.
type Filter struct {
	Pred kernels.Expr
	Mem  memory.Allocator
}

var _ Operator = (*Filter)(nil)

// Process evaluates the predicate over the live rows.
func (f *Filter) Process(b *vector.Batch, out Output) error {
	if b.Len() == 0 {
		b.Release()
		return nil
	}
	pred, err := f.Pred.Eval(b, f.Mem)
	if err != nil {
		b.Release()
		return fmt.Errorf("WHERE %s: %w", f.Pred, err)
	}
	// SelectTrue: nil = every row passes, empty = none does.
	sel := kernels.SelectTrue(pred, b)
	pred.Release()
	if sel != nil && len(sel) == 0 {
		b.Release()
		return nil
	}
	b.Sel = sel
	return out.Emit(b)
}

// Stateless: a filter keeps nothing between batches.
func (f *Filter) Stateless() {}

// OutputColumn: a filter keeps every column in place.
func (f *Filter) OutputColumn(c int) int { return c }

var _ Passthrough = (*Filter)(nil)
