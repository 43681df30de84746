package kernels

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// GroupAggConfig describes an unwindowed grouped aggregate.
type GroupAggConfig struct {
	Input    *arrow.Schema
	Keys     []int
	KeyNames []string
	Aggs     []AggSpec
}

// GroupAgg is the unwindowed (updating) grouped aggregate. Its output is a
// changelog, as Flink's non-mini-batch group aggregate: every input row
// yields +I with its group's first values, or -U (old values) and +U (new
// values) when they changed; a row that changes nothing yields nothing.
// Emitting per row, in row order, makes the changelog the same at any batch
// size. Input must be insert-only.
type GroupAgg struct {
	cfg    GroupAggConfig
	mem    memory.Allocator
	tbl    *htTable
	accs   []groupAcc
	schema *arrow.Schema
	seen   []bool // per id: the group has emitted

	zeros   []int64
	iota    []int32
	cols    []arrow.Array
	changed []bool
}

// groupAcc is one aggregate's state, indexed by group id. step folds
// entries in order, remembering each entry's old and new value and marking
// entries whose value changed; build makes an output column from entries
// (old or new image). stateFields, snapshot and restore are its part of a
// checkpoint (groupagg_state.go).
type groupAcc interface {
	grow(n int)
	step(gids []int32, arr arrow.Array, rows []int32, changed []bool)
	build(mem memory.Allocator, idx []int32, old []bool) arrow.Array
	typ() arrow.DataType
	stateFields(prefix string) []arrow.Field
	snapshot(mem memory.Allocator, ids []int32) []arrow.Array
	restore(ids []int32, cols []arrow.Array) error
}

// NewGroupAgg validates cfg.
func NewGroupAgg(cfg GroupAggConfig, mem memory.Allocator) (*GroupAgg, error) {
	g := &GroupAgg{cfg: cfg, mem: mem}
	var keys []htKeyCol
	var fields []arrow.Field
	for i, k := range cfg.Keys {
		f := cfg.Input.Field(k)
		kc, err := newHTKeyCol(f.Type)
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
	g.tbl = newHTTable(keys)
	for i, a := range cfg.Aggs {
		var in arrow.DataType
		if a.Arg >= 0 {
			in = cfg.Input.Field(a.Arg).Type
		}
		acc, err := newGroupAcc(a.Func, in)
		if err != nil {
			return nil, err
		}
		g.accs = append(g.accs, acc)
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("agg%d", i)
		}
		fields = append(fields, arrow.Field{Name: name, Type: acc.typ(), Nullable: true})
	}
	g.schema = arrow.NewSchema(fields, nil)
	return g, nil
}

// OutputSchema is keys then aggregates.
func (g *GroupAgg) OutputSchema() *arrow.Schema { return g.schema }

// Groups is the number of groups.
func (g *GroupAgg) Groups() int { return g.tbl.n }

// Add folds the live rows of b in order and returns the changelog they
// cause (nil when nothing changed). b stays owned by the caller.
func (g *GroupAgg) Add(b *vector.Batch) (*vector.Batch, error) {
	rows, err := insertRows(b, &g.iota, "GROUP BY")
	if err != nil {
		return nil, err
	}
	n := len(rows)
	if n == 0 {
		return nil, nil
	}
	g.zeros = winGrow(g.zeros, n)
	clear(g.zeros)
	g.cols = g.cols[:0]
	for _, k := range g.cfg.Keys {
		g.cols = append(g.cols, b.Column(k))
	}
	ids := g.tbl.lookup(g.zeros, rows, g.cols, n)
	if sz := g.tbl.size(); sz > len(g.seen) {
		g.seen = append(g.seen, make([]bool, sz-len(g.seen))...)
		for _, a := range g.accs {
			a.grow(sz)
		}
	}
	g.changed = winGrow(g.changed, n)
	clear(g.changed)
	for i, a := range g.accs {
		var arr arrow.Array
		if c := g.cfg.Aggs[i].Arg; c >= 0 {
			arr = b.Column(c)
		}
		a.step(ids, arr, rows, g.changed)
	}
	// Decide the changelog entry by entry.
	var idx []int32
	var old []bool
	var kinds []vector.RowKind
	for k, id := range ids[:n] {
		switch {
		case !g.seen[id]:
			g.seen[id] = true
			idx, old, kinds = append(idx, int32(k)), append(old, false), append(kinds, vector.Insert)
		case g.changed[k]:
			idx, old, kinds = append(idx, int32(k), int32(k)), append(old, true, false), append(kinds, vector.UpdateBefore, vector.UpdateAfter)
		}
	}
	if len(idx) == 0 {
		return nil, nil
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
		cols = append(cols, a.build(g.mem, idx, old))
	}
	rec := array.NewRecordBatch(g.schema, cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	out := vector.New(rec)
	if len(g.accs) > 0 {
		out.Kinds = kinds
	} // without aggregates only inserts happen: an insert-only stream
	return out, nil
}

// insertRows returns the live rows of b (reusing *scratch when b is dense)
// and fails if one of them is not an insert: what names the operator.
func insertRows(b *vector.Batch, scratch *[]int32, what string) ([]int32, error) {
	rows := b.Sel
	if rows == nil {
		n := b.NumRows()
		if cap(*scratch) < n {
			*scratch = make([]int32, n)
			for i := range *scratch {
				(*scratch)[i] = int32(i)
			}
		}
		rows = (*scratch)[:n]
	}
	if b.Kinds != nil {
		for _, i := range rows {
			if b.Kinds[i] != vector.Insert {
				return nil, fmt.Errorf("%s over an updating (changelog) input is not supported", what)
			}
		}
	}
	return rows, nil
}

func newGroupAcc(f AggFunc, in arrow.DataType) (groupAcc, error) {
	switch f {
	case AggCountStar, AggCount:
		return &gaCount{star: f == AggCountStar}, nil
	case AggCountDistinct:
		return &gaDistinct{}, nil
	case AggSum:
		switch in.ID() {
		case arrow.INT64:
			return &gaSum[int64]{t: arrow.PrimitiveTypes.Int64}, nil
		case arrow.FLOAT64:
			return &gaSum[float64]{t: arrow.PrimitiveTypes.Float64}, nil
		}
	case AggAvg:
		if in.ID() == arrow.FLOAT64 {
			return &gaAvg{}, nil
		}
	case AggMin, AggMax:
		max := f == AggMax
		switch in.ID() {
		case arrow.INT8:
			return &gaExt[int8]{t: in, max: max}, nil
		case arrow.INT16:
			return &gaExt[int16]{t: in, max: max}, nil
		case arrow.INT32:
			return &gaExt[int32]{t: in, max: max}, nil
		case arrow.INT64:
			return &gaExt[int64]{t: in, max: max}, nil
		case arrow.FLOAT32:
			return &gaExt[float32]{t: in, max: max}, nil
		case arrow.FLOAT64:
			return &gaExt[float64]{t: in, max: max}, nil
		case arrow.TIMESTAMP:
			return &gaExt[arrow.Timestamp]{t: in, max: max}, nil
		case arrow.STRING:
			return &gaExt[string]{t: in, max: max}, nil
		case arrow.BOOL:
			return &gaBoolExt{gaExt[int8]{max: max}}, nil
		}
	}
	return nil, fmt.Errorf("aggregate %v of %v is not supported by the updating aggregate", f, in)
}

// gaCount is COUNT(*) and COUNT(x).
type gaCount struct {
	star     bool
	n        []int64
	old, new []int64
}

func (a *gaCount) typ() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (a *gaCount) grow(n int)          { a.n = append(a.n, make([]int64, n-len(a.n))...) }

func (a *gaCount) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = winGrow(a.old, n), winGrow(a.new, n)
	for k, r := range rows {
		id := gids[k]
		a.old[k] = a.n[id]
		if a.star || arr.IsValid(int(r)) {
			a.n[id]++
			changed[k] = true
		}
		a.new[k] = a.n[id]
	}
}

func (a *gaCount) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(len(idx))
	for j, k := range idx {
		if old[j] {
			b.UnsafeAppend(a.old[k])
		} else {
			b.UnsafeAppend(a.new[k])
		}
	}
	return b.NewArray()
}

// gaSum is SUM over BIGINT or DOUBLE (the binder casts narrower types).
type gaSum[T int64 | float64] struct {
	t            arrow.DataType
	sum          []T
	has          []bool
	old, new     []T
	oldOK, newOK []bool
}

func (a *gaSum[T]) typ() arrow.DataType { return a.t }
func (a *gaSum[T]) grow(n int) {
	a.sum = append(a.sum, make([]T, n-len(a.sum))...)
	a.has = append(a.has, make([]bool, n-len(a.has))...)
}

func (a *gaSum[T]) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = winGrow(a.old, n), winGrow(a.new, n)
	a.oldOK, a.newOK = winGrow(a.oldOK, n), winGrow(a.newOK, n)
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		a.old[k], a.oldOK[k] = a.sum[id], a.has[id]
		if arr.IsValid(int(r)) {
			v := vals[r]
			if v != 0 || !a.has[id] {
				changed[k] = true
			}
			a.sum[id] += v
			a.has[id] = true
		}
		a.new[k], a.newOK[k] = a.sum[id], a.has[id]
	}
}

func (a *gaSum[T]) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuild(mem, a.t, idx, old, a.old, a.new, a.oldOK, a.newOK)
}

// gaAvg is AVG over DOUBLE.
type gaAvg struct {
	sum          []float64
	n            []int64
	old, new     []float64
	oldOK, newOK []bool
}

func (a *gaAvg) typ() arrow.DataType { return arrow.PrimitiveTypes.Float64 }
func (a *gaAvg) grow(n int) {
	a.sum = append(a.sum, make([]float64, n-len(a.sum))...)
	a.n = append(a.n, make([]int64, n-len(a.n))...)
}

func (a *gaAvg) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = winGrow(a.old, n), winGrow(a.new, n)
	a.oldOK, a.newOK = winGrow(a.oldOK, n), winGrow(a.newOK, n)
	vals := arrow.GetValues[float64](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		if a.n[id] > 0 {
			a.old[k], a.oldOK[k] = a.sum[id]/float64(a.n[id]), true
		} else {
			a.oldOK[k] = false
		}
		if arr.IsValid(int(r)) {
			a.sum[id] += vals[r]
			a.n[id]++
		}
		if a.n[id] > 0 {
			a.new[k], a.newOK[k] = a.sum[id]/float64(a.n[id]), true
		} else {
			a.newOK[k] = false
		}
		if a.oldOK[k] != a.newOK[k] || a.old[k] != a.new[k] {
			changed[k] = true
		}
	}
}

func (a *gaAvg) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuild(mem, arrow.PrimitiveTypes.Float64, idx, old, a.old, a.new, a.oldOK, a.newOK)
}

// gaExt is MIN or MAX over an ordered type.
type gaExt[T cmp.Ordered] struct {
	t            arrow.DataType
	max          bool
	v            []T
	has          []bool
	old, new     []T
	oldOK, newOK []bool
}

func (a *gaExt[T]) typ() arrow.DataType { return a.t }
func (a *gaExt[T]) grow(n int) {
	a.v = append(a.v, make([]T, n-len(a.v))...)
	a.has = append(a.has, make([]bool, n-len(a.has))...)
}

func (a *gaExt[T]) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = winGrow(a.old, n), winGrow(a.new, n)
	a.oldOK, a.newOK = winGrow(a.oldOK, n), winGrow(a.newOK, n)
	get := gaValues[T](arr)
	for k, r := range rows {
		id := gids[k]
		a.old[k], a.oldOK[k] = a.v[id], a.has[id]
		if arr.IsValid(int(r)) {
			v := get(int(r))
			if !a.has[id] || (a.max && v > a.v[id]) || (!a.max && v < a.v[id]) {
				// A string Value aliases the batch's buffer: keep a copy.
				if s, ok := any(v).(string); ok {
					v = any(strings.Clone(s)).(T)
				}
				a.v[id], a.has[id] = v, true
				changed[k] = true
			}
		}
		a.new[k], a.newOK[k] = a.v[id], a.has[id]
	}
}

func (a *gaExt[T]) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuild(mem, a.t, idx, old, a.old, a.new, a.oldOK, a.newOK)
}

// gaBoolExt is MIN/MAX over BOOLEAN (false < true).
type gaBoolExt struct{ gaExt[int8] }

func (a *gaBoolExt) typ() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (a *gaBoolExt) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = winGrow(a.old, n), winGrow(a.new, n)
	a.oldOK, a.newOK = winGrow(a.oldOK, n), winGrow(a.newOK, n)
	ba := arr.(*array.Boolean)
	for k, r := range rows {
		id := gids[k]
		a.old[k], a.oldOK[k] = a.v[id], a.has[id]
		if arr.IsValid(int(r)) {
			var v int8
			if ba.Value(int(r)) {
				v = 1
			}
			if !a.has[id] || (a.max && v > a.v[id]) || (!a.max && v < a.v[id]) {
				a.v[id], a.has[id] = v, true
				changed[k] = true
			}
		}
		a.new[k], a.newOK[k] = a.v[id], a.has[id]
	}
}

func (a *gaBoolExt) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for j, k := range idx {
		v, ok := a.new[k], a.newOK[k]
		if old[j] {
			v, ok = a.old[k], a.oldOK[k]
		}
		if ok {
			b.Append(v == 1)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// gaValues returns arr's typed Value method.
func gaValues[T cmp.Ordered](arr arrow.Array) func(int) T {
	if v, ok := arr.(interface{ Value(int) T }); ok {
		return v.Value
	}
	panic(fmt.Sprintf("gaValues: %s", arr.DataType()))
}

// gaBuild builds an output column from old/new images.
func gaBuild[T cmp.Ordered](mem memory.Allocator, t arrow.DataType, idx []int32, old []bool, ov, nv []T, ook, nok []bool) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	app := b.(interface{ Append(T) })
	for j, k := range idx {
		v, ok := nv[k], nok[k]
		if old[j] {
			v, ok = ov[k], ook[k]
		}
		if ok {
			app.Append(v)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// gaDistinct is COUNT(DISTINCT x): a set of values per group.
type gaDistinct struct {
	sets     []map[string]struct{}
	old, new []int64
}

func (a *gaDistinct) typ() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (a *gaDistinct) grow(n int) {
	a.sets = append(a.sets, make([]map[string]struct{}, n-len(a.sets))...)
}

func (a *gaDistinct) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = winGrow(a.old, n), winGrow(a.new, n)
	for k, r := range rows {
		id := gids[k]
		set := a.sets[id]
		a.old[k] = int64(len(set))
		if arr.IsValid(int(r)) {
			if set == nil {
				set = map[string]struct{}{}
				a.sets[id] = set
			}
			if addDistinct(set, arr, int(r)) {
				changed[k] = true
			}
		}
		a.new[k] = int64(len(set))
	}
}

func (a *gaDistinct) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for j, k := range idx {
		if old[j] {
			b.Append(a.old[k])
		} else {
			b.Append(a.new[k])
		}
	}
	return b.NewArray()
}
