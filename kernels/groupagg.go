package kernels

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// GroupAggConfig describes an unwindowed grouped aggregate.
type GroupAggConfig struct {
	Input    *arrow.Schema
	Keys     []int
	KeyNames []string
	Aggs     []AggSpec
	// Retract makes the aggregate accept a changelog input (an updating
	// result upstream): +I and +U rows accumulate, -U and -D rows retract
	// (groupagg_retract.go). Without it every input row must be an insert.
	Retract bool
}

// GroupAgg is the unwindowed (updating) grouped aggregate. Its output is a
// changelog, as Flink's non-mini-batch group aggregate: every input row
// yields +I with its group's first values, or -U (old values) and +U (new
// values) when they changed; a row that changes nothing yields nothing.
// Emitting per row, in row order, makes the changelog the same at any batch
// size. Input must be insert-only unless the configuration sets Retract.
type GroupAgg struct {
	cfg    GroupAggConfig
	mem    memory.Allocator
	tbl    *htTable
	accs   []groupAcc
	schema *arrow.Schema
	seen   []bool // per id: the group has emitted

	// iacc[i] (insert-only) or racc[i] (with Retract) is accs[i]. With
	// Retract, each group counts its rows (nrows); ch and born are per
	// batch.
	iacc  []insertAcc
	racc  []retractAcc
	nrows []int64
	ch    gaChanges
	born  []bool

	zeros   []int64
	iota    []int32
	cols    []arrow.Array
	changed []bool
}

// groupAcc is one aggregate's state, indexed by group id. Its step
// (insertAcc, or retractAcc over a changelog) folds entries in order,
// remembering each entry's old and new value and marking entries whose
// value changed; build makes an output column from entries (old or new
// image). stateFields, snapshot and restore are its part of a checkpoint
// (groupagg_state.go).
type groupAcc interface {
	grow(n int)
	build(mem memory.Allocator, idx []int32, old []bool) arrow.Array
	typ() arrow.DataType
	stateFields(prefix string) []arrow.Field
	snapshot(mem memory.Allocator, ids []int32) []arrow.Array
	restore(ids []int32, cols []arrow.Array) error
}

// insertAcc is an accumulator over an insert-only input.
type insertAcc interface {
	groupAcc
	step(gids []int32, arr arrow.Array, rows []int32, changed []bool)
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
		var acc groupAcc
		if cfg.Retract {
			racc, err := newRetractAcc(a.Func, in)
			if err != nil {
				return nil, err
			}
			g.racc = append(g.racc, racc)
			acc = racc
		} else {
			iacc, err := newGroupAcc(a.Func, in)
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
	if g.cfg.Retract {
		return g.addChanges(b)
	}
	rows, err := insertRows(b, &g.iota, "GROUP BY")
	if err != nil {
		return nil, err
	}
	n := len(rows)
	if n == 0 {
		return nil, nil
	}
	ids := g.groupIDs(b, rows)
	g.changed = winGrow(g.changed, n)
	clear(g.changed)
	for i, a := range g.iacc {
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
	if len(g.accs) == 0 {
		kinds = nil // without aggregates only inserts happen: an insert-only stream
	}
	return g.output(b, rows, idx, old, kinds), nil
}

// groupIDs finds or creates the group of each of rows (b's live rows) and
// makes room for new groups in the per-group columns.
func (g *GroupAgg) groupIDs(b *vector.Batch, rows []int32) []int32 {
	n := len(rows)
	g.zeros = winGrow(g.zeros, n)
	clear(g.zeros)
	g.cols = g.cols[:0]
	for _, k := range g.cfg.Keys {
		g.cols = append(g.cols, b.Column(k))
	}
	ids := g.tbl.lookup(g.zeros, rows, g.cols, n)
	g.grow(g.tbl.size())
	return ids
}

// grow makes room for group ids < sz.
func (g *GroupAgg) grow(sz int) {
	if sz <= len(g.seen) {
		return
	}
	g.seen = append(g.seen, make([]bool, sz-len(g.seen))...)
	if g.cfg.Retract {
		g.nrows = append(g.nrows, make([]int64, sz-len(g.nrows))...)
	}
	for _, a := range g.accs {
		a.grow(sz)
	}
}

// output builds the changelog batch of entries idx (indexes into rows, the
// live rows of b): each entry's keys from b, its aggregates' old or new
// image, kinds (nil: an insert-only batch). It returns nil for no entries.
func (g *GroupAgg) output(b *vector.Batch, rows, idx []int32, old []bool, kinds []vector.RowKind) *vector.Batch {
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
		cols = append(cols, a.build(g.mem, idx, old))
	}
	rec := array.NewRecordBatch(g.schema, cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	out := vector.New(rec)
	out.Kinds = kinds
	return out
}

// insertRows returns the live rows of b (reusing *scratch when b is dense)
// and fails if one of them is not an insert: what names the operator.
func insertRows(b *vector.Batch, scratch *[]int32, what string) ([]int32, error) {
	rows := liveRows(b, scratch)
	if b.Kinds != nil {
		for _, i := range rows {
			if b.Kinds[i] != vector.Insert {
				return nil, fmt.Errorf("%s over an updating (changelog) input is not supported", what)
			}
		}
	}
	return rows, nil
}

// liveRows returns the live rows of b: b.Sel, or 0..n-1 from *scratch
// (made once) when b is dense.
func liveRows(b *vector.Batch, scratch *[]int32) []int32 {
	if b.Sel != nil {
		return b.Sel
	}
	n := b.NumRows()
	if cap(*scratch) < n {
		*scratch = make([]int32, n)
		for i := range *scratch {
			(*scratch)[i] = int32(i)
		}
	}
	return (*scratch)[:n]
}

// newGroupAcc makes the accumulator of f over in. It supports what the
// window aggregate does (newAggState), with the same result types and
// values: SUM of integers is BIGINT (the low 64 bits of an exact 128-bit
// sum), AVG of integers and SUM/AVG of floats DOUBLE (compensated float
// sums), SUM/AVG of DECIMAL(p, s) DECIMAL(38, s) / DECIMAL(38, max(s, 6)),
// MIN/MAX the argument's type.
func newGroupAcc(f AggFunc, in arrow.DataType) (insertAcc, error) {
	switch f {
	case AggCountStar, AggCount:
		return &gaCount{star: f == AggCountStar}, nil
	case AggCountDistinct:
		return &gaDistinct{}, nil
	case AggSum, AggAvg:
		avg := f == AggAvg
		switch in.ID() {
		case arrow.INT8:
			return &gaIntSum[int8]{avg: avg}, nil
		case arrow.INT16:
			return &gaIntSum[int16]{avg: avg}, nil
		case arrow.INT32:
			return &gaIntSum[int32]{avg: avg}, nil
		case arrow.INT64:
			return &gaIntSum[int64]{avg: avg}, nil
		case arrow.FLOAT32:
			return &gaFloatSum[float32]{avg: avg}, nil
		case arrow.FLOAT64:
			return &gaFloatSum[float64]{avg: avg}, nil
		case arrow.DECIMAL128:
			return &gaDecSum{dt: in.(*arrow.Decimal128Type), avg: avg}, nil
		}
	case AggMin, AggMax:
		max := f == AggMax
		switch in.ID() {
		case arrow.INT8:
			return newGAExt[int8](in, max), nil
		case arrow.INT16:
			return newGAExt[int16](in, max), nil
		case arrow.INT32:
			return newGAExt[int32](in, max), nil
		case arrow.INT64:
			return newGAExt[int64](in, max), nil
		case arrow.FLOAT32:
			return &gaExt[float32]{t: in, max: max, less: gaFloatLess[float32]}, nil
		case arrow.FLOAT64:
			return &gaExt[float64]{t: in, max: max, less: gaFloatLess[float64]}, nil
		case arrow.DATE32:
			return newGAExt[arrow.Date32](in, max), nil
		case arrow.DATE64:
			return newGAExt[arrow.Date64](in, max), nil
		case arrow.TIMESTAMP:
			return newGAExt[arrow.Timestamp](in, max), nil
		case arrow.STRING:
			return newGAExt[string](in, max), nil
		case arrow.DECIMAL128:
			return &gaExt[decimal128.Num]{t: in, max: max, less: decimal128.Num.Less}, nil
		case arrow.BOOL:
			return &gaBoolExt{gaExt[int8]{max: max, less: cmp.Less[int8]}}, nil
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

// gaImg holds the old and new result images of the entries of one step;
// an entry whose images differ (bit for bit) changed the group's result.
type gaImg[O comparable] struct {
	old, new     []O
	oldOK, newOK []bool
}

func (m *gaImg[O]) begin(n int) {
	m.old, m.new = winGrow(m.old, n), winGrow(m.new, n)
	m.oldOK, m.newOK = winGrow(m.oldOK, n), winGrow(m.newOK, n)
}

// put records entry k's images and marks k changed when they differ.
func (m *gaImg[O]) put(k int, o O, ook bool, nw O, nok bool, changed []bool) {
	m.old[k], m.oldOK[k], m.new[k], m.newOK[k] = o, ook, nw, nok
	if ook != nok || (nok && o != nw) {
		changed[k] = true
	}
}

// gaBuildBits builds a BIGINT or DOUBLE column (float) from images kept
// as bits.
func gaBuildBits(mem memory.Allocator, m *gaImg[uint64], float bool, idx []int32, old []bool) arrow.Array {
	t := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if float {
		t = arrow.PrimitiveTypes.Float64
	}
	o := winNewFixed[uint64](mem, t, len(idx))
	for j, k := range idx {
		v, ok := m.new[k], m.newOK[k]
		if old[j] {
			v, ok = m.old[k], m.oldOK[k]
		}
		if ok {
			o.vals[j] = v
		} else {
			o.setNull(j)
		}
	}
	return o.finish()
}

// gaIntSum is SUM (BIGINT) or AVG (DOUBLE) of an integer column. As in the
// window aggregate (aggIntState) the sum is exact in 128 bits (hi:lo): SUM
// reports its low 64 bits, wrapping like BIGINT arithmetic, AVG divides
// the exact sum. Images are kept as bits (int64 or float64).
type gaIntSum[T int8 | int16 | int32 | int64] struct {
	avg     bool
	retract bool // over a changelog: the state counts SUM's values too
	n       []int64
	lo      []uint64
	hi      []int64
	img     gaImg[uint64]
}

func (a *gaIntSum[T]) typ() arrow.DataType {
	if a.avg {
		return arrow.PrimitiveTypes.Float64
	}
	return arrow.PrimitiveTypes.Int64
}

func (a *gaIntSum[T]) grow(n int) {
	a.n = append(a.n, make([]int64, n-len(a.n))...)
	a.lo = append(a.lo, make([]uint64, n-len(a.lo))...)
	a.hi = append(a.hi, make([]int64, n-len(a.hi))...)
}

func (a *gaIntSum[T]) out(id int32) (uint64, bool) {
	switch {
	case a.n[id] == 0:
		return 0, false
	case a.avg:
		return math.Float64bits(aggInt128Float(a.hi[id], a.lo[id]) / float64(a.n[id])), true
	}
	return a.lo[id], true
}

func (a *gaIntSum[T]) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	a.img.begin(len(rows))
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if arr.IsValid(int(r)) {
			v := int64(vals[r])
			var carry uint64
			a.lo[id], carry = bits.Add64(a.lo[id], uint64(v), 0)
			a.hi[id] += int64(carry) + v>>63
			a.n[id]++
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
	}
}

func (a *gaIntSum[T]) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuildBits(mem, &a.img, a.avg, idx, old)
}

// gaFloatSum is SUM or AVG (DOUBLE) of a FLOAT or DOUBLE column, with the
// window aggregate's compensated sum (aggFloatState): s plus the rounding
// errors collected in c.
type gaFloatSum[T float32 | float64] struct {
	avg  bool
	n    []int64
	s, c []float64
	img  gaImg[uint64]
	// Over a changelog, non-finite values are counted apart in nf
	// (stepChanges).
	retract bool
	nf      []gaNonFinite
}

func (a *gaFloatSum[T]) typ() arrow.DataType { return arrow.PrimitiveTypes.Float64 }

func (a *gaFloatSum[T]) grow(n int) {
	a.n = append(a.n, make([]int64, n-len(a.n))...)
	a.s = append(a.s, make([]float64, n-len(a.s))...)
	a.c = append(a.c, make([]float64, n-len(a.c))...)
	if a.retract {
		a.nf = append(a.nf, make([]gaNonFinite, n-len(a.nf))...)
	}
}

func (a *gaFloatSum[T]) out(id int32) (uint64, bool) {
	if a.n[id] == 0 {
		return 0, false
	}
	s := a.s[id]
	v := s + a.c[id]
	if math.IsInf(s, 0) || s != s {
		v = s // the error terms of an infinite sum are NaN
	}
	if a.retract {
		if f, ok := a.nf[id].value(); ok {
			v += f
		}
	}
	if a.avg {
		v /= float64(a.n[id])
	}
	return math.Float64bits(v), true
}

func (a *gaFloatSum[T]) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	a.img.begin(len(rows))
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if arr.IsValid(int(r)) {
			x, s := float64(vals[r]), a.s[id]
			t := s + x
			bb := t - s
			a.c[id] += (s - (t - bb)) + (x - bb)
			a.s[id] = t
			a.n[id]++
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
	}
}

func (a *gaFloatSum[T]) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuildBits(mem, &a.img, true, idx, old)
}

// gaDecSum is SUM or AVG of a DECIMAL(p, s) column, exact as the window
// aggregate's (aggDecState): SUM is DECIMAL(38, s), AVG DECIMAL(38,
// max(s, 6)) rounded half up.
type gaDecSum struct {
	dt      *arrow.Decimal128Type
	avg     bool
	retract bool // over a changelog: the state counts SUM's values too
	n       []int64
	sum     []decimal128.Num
	img     gaImg[decimal128.Num]
}

func (a *gaDecSum) typ() arrow.DataType {
	if a.avg {
		return &arrow.Decimal128Type{Precision: 38, Scale: max(a.dt.Scale, 6)}
	}
	return &arrow.Decimal128Type{Precision: 38, Scale: a.dt.Scale}
}

func (a *gaDecSum) grow(n int) {
	a.n = append(a.n, make([]int64, n-len(a.n))...)
	a.sum = append(a.sum, make([]decimal128.Num, n-len(a.sum))...)
}

func (a *gaDecSum) out(id int32) (decimal128.Num, bool) {
	switch {
	case a.n[id] == 0:
		return decimal128.Num{}, false
	case a.avg:
		return decAvg(a.sum[id], a.n[id], max(a.dt.Scale, 6)-a.dt.Scale), true
	}
	return a.sum[id], true
}

func (a *gaDecSum) step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	a.img.begin(len(rows))
	d := arr.(*array.Decimal128)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if d.IsValid(int(r)) {
			a.sum[id] = a.sum[id].Add(d.Value(int(r)))
			a.n[id]++
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
	}
}

func (a *gaDecSum) build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuild(mem, a.typ(), idx, old, a.img.old, a.img.new, a.img.oldOK, a.img.newOK)
}

// gaExt is MIN or MAX over a type ordered by less.
type gaExt[T any] struct {
	t            arrow.DataType
	max          bool
	less         func(a, b T) bool
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
			if !a.has[id] || (a.max && a.less(a.v[id], v)) || (!a.max && a.less(v, a.v[id])) {
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

func newGAExt[T cmp.Ordered](t arrow.DataType, max bool) *gaExt[T] {
	return &gaExt[T]{t: t, max: max, less: cmp.Less[T]}
}

// gaFloatLess orders floats as the window aggregate does: NaN above every
// other value.
func gaFloatLess[T float32 | float64](a, b T) bool { return a < b || (a == a && b != b) }

// gaValues returns arr's typed Value method.
func gaValues[T any](arr arrow.Array) func(int) T {
	if v, ok := arr.(interface{ Value(int) T }); ok {
		return v.Value
	}
	panic(fmt.Sprintf("gaValues: %s", arr.DataType()))
}

// gaBuild builds an output column from old/new images.
func gaBuild[T any](mem memory.Allocator, t arrow.DataType, idx []int32, old []bool, ov, nv []T, ook, nok []bool) arrow.Array {
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
