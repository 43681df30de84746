package planner

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/engine/op"
)

// union plans SetRel UNION ALL as binary union nodes (folded left for more
// than two inputs); rows of each input keep their order and watermarks.
func (b *builder) union(s *pb.SetRel) (*chain, error) {
	if s.GetOp() != pb.SetRel_SET_OP_UNION_ALL {
		return nil, fmt.Errorf("set operation %s is not supported (only UNION ALL)", s.GetOp())
	}
	if len(s.GetInputs()) < 2 {
		return nil, fmt.Errorf("UNION ALL needs two inputs")
	}
	acc, err := b.rel(s.GetInputs()[0])
	if err != nil {
		return nil, err
	}
	for _, in := range s.GetInputs()[1:] {
		c, err := b.rel(in)
		if err != nil {
			return nil, err
		}
		if acc.schema.NumFields() != c.schema.NumFields() {
			return nil, fmt.Errorf("UNION ALL inputs have %d and %d columns", acc.schema.NumFields(), c.schema.NumFields())
		}
		for i, f := range acc.schema.Fields() {
			if !arrow.TypeEqual(f.Type, c.schema.Field(i).Type) {
				return nil, fmt.Errorf("UNION ALL column %d has types %s and %s", i+1, f.Type, c.schema.Field(i).Type)
			}
		}
		acc = &chain{binary: op.Union{}, inputs: []*engine.Node{acc.node(), c.node()}, schema: acc.schema, updating: acc.updating || c.updating}
	}
	return acc, b.emit(acc, s.GetCommon())
}
