package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/engine/op/join"
	"github.com/clink-dev/clink/engine/op/topn"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
)

// State signatures (checkpoint.Signature) say what shapes an operator's
// state, so that a restore into an edited job keeps every operator whose
// state still fits: the group key, window and aggregates of an aggregate,
// the sides and keys of a join, the table and connector of a source or
// sink. Connector options, stateless projections and filters are not in
// them. The statement (the INSERT's target) is, so that an operator that
// the numbering of names (window_aggregate_2) moved to another statement
// is refused rather than restored with another's state.

// sign sets the signature of the operator the chain added last.
func (c *chain) sign(sig checkpoint.Signature) {
	for len(c.sigs) < len(c.ops) {
		c.sigs = append(c.sigs, nil)
	}
	c.sigs[len(c.ops)-1] = sig
}

// opSig starts the signature of an operator of the statement being
// planned.
func (b *builder) opSig(kind string) checkpoint.Signature {
	return checkpoint.Signature{"kind": kind, "statement": b.statement}
}

func sourceSig(table, connector, statement string) checkpoint.Signature {
	return checkpoint.Signature{"kind": "source", "table": table, "connector": connector, "statement": statement}
}

// sinkSig's delivery says whether the sink stages its output in
// checkpoints: the staged transactions are its state, which a sink that
// writes directly would drop on a restore.
func sinkSig(table, connector, delivery string) checkpoint.Signature {
	return checkpoint.Signature{"kind": "sink", "table": table, "connector": connector, "delivery": delivery}
}

// sinkDelivery is the delivery entry of a sink's signature: staged or
// direct when the factory says (connectors.SinkStaging), else the
// delivery_guarantee option as written.
func sinkDelivery(f any, t *connectors.Table) string {
	if st, ok := f.(connectors.SinkStaging); ok {
		if st.Staged(t) {
			return "exactly_once (staged per checkpoint)"
		}
		return "at_least_once (written directly)"
	}
	if dg := t.Options["delivery_guarantee"]; dg != "" {
		return dg
	}
	return "the connector's default"
}

func colList(s *arrow.Schema, cols []int) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = colName(s, c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func colName(s *arrow.Schema, c int) string {
	if c < 0 || c >= s.NumFields() {
		return fmt.Sprintf("$%d", c)
	}
	f := s.Field(c)
	return f.Name + " " + kernels.SQLTypeName(f.Type)
}

func everyCol(s *arrow.Schema) []int {
	out := make([]int, s.NumFields())
	for i := range out {
		out[i] = i
	}
	return out
}

// aggList renders aggregates as SQL with their argument's column and type:
// [COUNT(*), AVG(temp_c DOUBLE)].
func aggList(in *arrow.Schema, specs []agg.Spec) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		switch s.Func {
		case agg.CountStar:
			parts[i] = "COUNT(*)"
		case agg.CountDistinct:
			parts[i] = "COUNT(DISTINCT " + colName(in, s.Arg) + ")"
		default:
			parts[i] = s.Func.String() + "(" + colName(in, s.Arg) + ")"
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func windowString(s kwindow.Spec) string {
	switch s.Kind {
	case kwindow.Tumble:
		return fmt.Sprintf("TUMBLE(size %d ms, offset %d ms)", s.Size, s.Offset)
	case kwindow.Hop:
		return fmt.Sprintf("HOP(size %d ms, slide %d ms, offset %d ms)", s.Size, s.Slide, s.Offset)
	case kwindow.Cumulate:
		return fmt.Sprintf("CUMULATE(size %d ms, step %d ms, offset %d ms)", s.Size, s.Step, s.Offset)
	case kwindow.Session:
		return fmt.Sprintf("SESSION(gap %d ms)", s.Gap)
	}
	return s.Kind.String()
}

func joinSig(b *builder, cfg join.Config) checkpoint.Signature {
	sig := b.opSig("join")
	kinds := map[join.Kind]string{join.Inner: "INNER", join.Left: "LEFT", join.Right: "RIGHT", join.Full: "FULL"}
	sig["type"] = kinds[cfg.Kind]
	sig["left columns"] = colList(cfg.Left, everyCol(cfg.Left))
	sig["right columns"] = colList(cfg.Right, everyCol(cfg.Right))
	sig["left key"] = colList(cfg.Left, cfg.LeftKeys)
	sig["right key"] = colList(cfg.Right, cfg.RightKeys)
	sig["time bounds"] = "none (regular join)"
	if iv := cfg.Interval; iv != nil {
		sig["time bounds"] = fmt.Sprintf("left time %s, right time %s, bounds [%d, %d] ms", colName(cfg.Left, iv.LeftTime), colName(cfg.Right, iv.RightTime), iv.Lower, iv.Upper)
	}
	return sig
}

func topNSig(b *builder, cfg topn.Config) checkpoint.Signature {
	sig := b.opSig("top_n")
	sig["partition"] = colList(cfg.Input, cfg.Partition)
	order := make([]string, len(cfg.Order))
	for i, k := range cfg.Order {
		order[i] = colName(cfg.Input, k.Col)
		if k.Desc {
			order[i] += " DESC"
		}
		if k.NullsFirst {
			order[i] += " NULLS FIRST"
		}
	}
	sig["order"] = "[" + strings.Join(order, ", ") + "]"
	sig["limit"] = fmt.Sprint(cfg.Limit)
	sig["columns"] = colList(cfg.Input, everyCol(cfg.Input))
	sig["window time"] = "none"
	if cfg.TimeCol >= 0 {
		sig["window time"] = colName(cfg.Input, cfg.TimeCol)
	}
	return sig
}

// StateOperators lists the operators with state that a job of p would
// record in its checkpoints, with their signatures, planned as Validate
// plans (no source or sink opened, one subtask): what `clink
// savepoint-check` compares with a checkpoint's.
func StateOperators(p *pb.Plan, env Env) ([]checkpoint.OperatorInfo, error) {
	job, err := build(p, env, true)
	if err != nil {
		return nil, err
	}
	return engine.StateOperators(job.Pipelines), nil
}
