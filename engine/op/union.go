package op

import "github.com/clink-dev/clink/vector"

// Union concatenates two inputs of the same schema (UNION ALL).
type Union struct{}

var _ BinaryOperator = Union{}

// ProcessSide passes the batch on.
func (Union) ProcessSide(side int, b *vector.Batch, out Output) error { return out.Emit(b) }

// Stateless: a union keeps nothing between batches.
func (Union) Stateless() {}
