package planner

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/engine/op/topn"
	"github.com/clink-dev/clink/substrait"
)

// topN plans a ConsistentPartitionWindowRel computing row_number() with
// Clink's Top-N enhancement {"clink_top_n": {"limit": N, "time_column": i}}
// (set when the query filters rn <= N). Without a limit the ranking would
// keep every row, so it is refused.
func (b *builder) topN(w *pb.ConsistentPartitionWindowRel) (*chain, error) {
	c, err := b.rel(w.GetInput())
	if err != nil {
		return nil, err
	}
	if c.updating {
		return nil, fmt.Errorf("Top-N over an updating (changelog) input is not supported yet")
	}
	if len(w.GetWindowFunctions()) != 1 {
		return nil, fmt.Errorf("window relation: only one row_number() is supported")
	}
	if name, err := b.fname(w.GetWindowFunctions()[0].GetFunctionReference()); err != nil || name != "row_number" {
		return nil, fmt.Errorf("window function %s is not supported (only row_number for Top-N)", name)
	}
	limit, timeCol, err := topNLimit(w)
	if err != nil {
		return nil, err
	}
	cfg := topn.Config{Input: c.schema, Limit: limit, TimeCol: timeCol}
	for _, p := range w.GetPartitionExpressions() {
		i, ok := substrait.FieldIndex(p)
		if !ok {
			return nil, fmt.Errorf("PARTITION BY must name columns")
		}
		cfg.Partition = append(cfg.Partition, i)
	}
	for _, s := range w.GetSorts() {
		i, ok := substrait.FieldIndex(s.GetExpr())
		if !ok {
			return nil, fmt.Errorf("ORDER BY in OVER must name columns")
		}
		k := topn.SortKey{Col: i}
		switch s.GetDirection() {
		case pb.SortField_SORT_DIRECTION_ASC_NULLS_FIRST:
			k.NullsFirst = true
		case pb.SortField_SORT_DIRECTION_ASC_NULLS_LAST:
		case pb.SortField_SORT_DIRECTION_DESC_NULLS_FIRST:
			k.Desc, k.NullsFirst = true, true
		case pb.SortField_SORT_DIRECTION_DESC_NULLS_LAST:
			k.Desc = true
		default:
			return nil, fmt.Errorf("sort direction %s is not supported", s.GetDirection())
		}
		cfg.Order = append(cfg.Order, k)
	}
	if timeCol >= 0 && (timeCol >= c.schema.NumFields() || c.schema.Field(timeCol).Type.ID() != arrow.INT64 && c.schema.Field(timeCol).Type.ID() != arrow.TIMESTAMP) {
		return nil, fmt.Errorf("Top-N time column $%d is not a BIGINT or TIMESTAMP column", timeCol)
	}
	t, err := topn.New(cfg, b.env.Runtime.Mem)
	if err != nil {
		return nil, err
	}
	c.add("top_n", t, t.OutputSchema())
	c.sign(topNSig(b, cfg))
	c.updating = !t.Windowed()
	return c, b.emit(c, w.GetCommon())
}

func topNLimit(w *pb.ConsistentPartitionWindowRel) (int64, int, error) {
	enh := w.GetAdvancedExtension().GetEnhancement()
	if enh == nil {
		return 0, 0, fmt.Errorf("ROW_NUMBER() runs only as Top-N: filter its result with rn <= N")
	}
	var st structpb.Struct
	if err := enh.UnmarshalTo(&st); err != nil {
		return 0, 0, fmt.Errorf("window enhancement is not a google.protobuf.Struct: %w", err)
	}
	v := st.Fields["clink_top_n"].GetStructValue()
	if v == nil {
		return 0, 0, fmt.Errorf("window enhancement has no clink_top_n")
	}
	limit := int64(v.Fields["limit"].GetNumberValue())
	timeCol := -1
	if tc, ok := v.Fields["time_column"]; ok {
		timeCol = int(tc.GetNumberValue())
	}
	return limit, timeCol, nil
}
