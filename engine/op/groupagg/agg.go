package groupagg

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/kernels/hash"
	"github.com/clink-dev/clink/vector"
)

// Config describes an unwindowed grouped aggregate.
type Config struct {
	Input    *arrow.Schema
	Keys     []int
	KeyNames []string
	Aggs     []agg.Spec
	// Retract makes the aggregate accept a changelog input (an updating
	// result upstream): +I and +U rows accumulate, -U and -D rows retract
	// (retract.go). Without it every input row must be an insert.
	Retract bool
}

// Agg is the unwindowed (updating) grouped aggregate. Its output is a
// changelog, as Flink's non-mini-batch group aggregate: every input row
// yields +I with its group's first values, or -U (old values) and +U (new
// values) when they changed; a row that changes nothing yields nothing.
// Emitting per row, in row order, makes the changelog the same at any batch
// size. Input must be insert-only unless the configuration sets Retract.
type Agg struct {
	cfg    Config
	mem    memory.Allocator
	tbl    *hash.Table
	accs   []agg.Acc
	schema *arrow.Schema
	seen   column.Chunked[bool] // per id: the group has emitted

	// iacc[i] (insert-only) or racc[i] (with Retract) is accs[i]. With
	// Retract, each group counts its rows (nrows); ch and born are per
	// batch.
	iacc  []agg.InsertAcc
	racc  []agg.RetractAcc
	nrows column.Chunked[int64]
	ch    agg.Changes
	born  []bool

	zeros   []int64
	iota    []int32
	cols    []arrow.Array
	changed []bool

	inc incState // incremental snapshots
}

// New validates cfg.
func New(cfg Config, mem memory.Allocator) (*Agg, error) {
	g := &Agg{cfg: cfg, mem: mem}
	var keys []hash.KeyCol
	var fields []arrow.Field
	for i, k := range cfg.Keys {
		f := cfg.Input.Field(k)
		kc, err := hash.NewKeyCol(f.Type)
		if err != nil {
			return nil, fmt.Errorf("GROUP BY %s: %w", f.Name, err)
		}
		keys = append(keys, kc)
		name := f.Name
		if i < len(cfg.KeyNames) {
			name = cfg.KeyNames[i]
		}
		fields = append(fields, arrow.Field{Name: name, Type: f.Type, Nullable: true})
	}
	g.tbl = hash.NewTable(keys)
	for i, a := range cfg.Aggs {
		var in arrow.DataType
		if a.Arg >= 0 {
			in = cfg.Input.Field(a.Arg).Type
		}
		var acc agg.Acc
		if cfg.Retract {
			racc, err := agg.NewRetractAcc(a.Func, in)
			if err != nil {
				return nil, err
			}
			g.racc = append(g.racc, racc)
			acc = racc
		} else {
			iacc, err := agg.NewInsertAcc(a.Func, in)
			if err != nil {
				return nil, err
			}
			g.iacc = append(g.iacc, iacc)
			acc = iacc
		}
		g.accs = append(g.accs, acc)
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("agg%d", i)
		}
		fields = append(fields, arrow.Field{Name: name, Type: acc.Type(), Nullable: true})
	}
	g.schema = arrow.NewSchema(fields, nil)
	return g, nil
}

// OutputSchema is keys then aggregates.
func (g *Agg) OutputSchema() *arrow.Schema { return g.schema }

// Groups is the number of groups.
func (g *Agg) Groups() int { return g.tbl.N }

// Add folds the live rows of b in order and returns the changelog they
// cause (nil when nothing changed). b stays owned by the caller.
func (g *Agg) Add(b *vector.Batch) (*vector.Batch, error) {
	if g.cfg.Retract {
		return g.addChanges(b)
	}
	rows, err := op.InsertRows(b, &g.iota, "GROUP BY")
	if err != nil {
		return nil, err
	}
	n := len(rows)
	if n == 0 {
		return nil, nil
	}
	ids := g.groupIDs(b, rows)
	g.touch(ids)
	g.changed = column.Grow(g.changed, n)
	clear(g.changed)
	for i, a := range g.iacc {
		var arr arrow.Array
		if c := g.cfg.Aggs[i].Arg; c >= 0 {
			arr = b.Column(c)
		}
		a.Step(ids, arr, rows, g.changed)
	}
	// Decide the changelog entry by entry.
	var idx []int32
	var old []bool
	var kinds []vector.RowKind
	for k, id := range ids[:n] {
		switch {
		case !*g.seen.At(id):
			*g.seen.At(id) = true
			idx, old, kinds = append(idx, int32(k)), append(old, false), append(kinds, vector.Insert)
		case g.changed[k]:
			idx, old, kinds = append(idx, int32(k), int32(k)), append(old, true, false), append(kinds, vector.UpdateBefore, vector.UpdateAfter)
		}
	}
	if len(g.accs) == 0 {
		kinds = nil // without aggregates only inserts happen: an insert-only stream
	}
	return g.output(b, rows, idx, old, kinds), nil
}

// groupIDs finds or creates the group of each of rows (b's live rows) and
// makes room for new groups in the per-group columns.
func (g *Agg) groupIDs(b *vector.Batch, rows []int32) []int32 {
	n := len(rows)
	g.zeros = column.Grow(g.zeros, n)
	clear(g.zeros)
	g.cols = g.cols[:0]
	for _, k := range g.cfg.Keys {
		g.cols = append(g.cols, b.Column(k))
	}
	ids := g.tbl.Lookup(g.zeros, rows, g.cols, n)
	g.grow(g.tbl.Size())
	return ids
}

// grow makes room for group ids < sz.
func (g *Agg) grow(sz int) {
	if sz <= g.seen.Len() {
		return
	}
	g.seen.Grow(sz)
	if g.cfg.Retract {
		g.nrows.Grow(sz)
	}
	for _, a := range g.accs {
		a.Grow(sz)
	}
}

// output builds the changelog batch of entries idx (indexes into rows, the
// live rows of b): each entry's keys from b, its aggregates' old or new
// image, kinds (nil: an insert-only batch). It returns nil for no entries.
func (g *Agg) output(b *vector.Batch, rows, idx []int32, old []bool, kinds []vector.RowKind) *vector.Batch {
	if len(idx) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, g.schema.NumFields())
	phys := make([]int32, len(idx))
	for j, k := range idx {
		phys[j] = rows[k]
	}
	for _, c := range g.cfg.Keys {
		cols = append(cols, vector.Take(g.mem, b.Column(c), phys))
	}
	for _, a := range g.accs {
		cols = append(cols, a.Build(g.mem, idx, old))
	}
	rec := array.NewRecordBatch(g.schema, cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	out := vector.New(rec)
	out.Kinds = kinds
	return out
}

// KeyColumns are the input columns of the GROUP BY key.
func (g *Agg) KeyColumns() []int { return append([]int(nil), g.cfg.Keys...) }

// OutputKeyColumns: the output starts with the key columns.
func (g *Agg) OutputKeyColumns() []int {
	out := make([]int, len(g.cfg.Keys))
	for i := range out {
		out[i] = i
	}
	return out
}

var (
	_ op.Operator      = (*Agg)(nil)
	_ op.StatsReporter = (*Agg)(nil)
	_ op.Stateful      = (*Agg)(nil)
	_ op.Keyed         = (*Agg)(nil)
	_ op.KeyedOutput   = (*Agg)(nil)
)

// Process folds the batch and emits the changes.
func (g *Agg) Process(b *vector.Batch, out op.Output) error {
	changes, err := g.Add(b)
	b.Release()
	if err != nil || changes == nil {
		return err
	}
	return out.Emit(changes)
}

// Stats reports the number of groups held.
func (g *Agg) Stats() map[string]int64 {
	return map[string]int64{"groups": int64(g.Groups())}
}
