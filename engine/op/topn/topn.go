package topn

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/kernels/hash"
	"github.com/clink-dev/clink/kernels/rowstore"
	"github.com/clink-dev/clink/vector"
)

// SortKey orders rows by one column.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// Config describes ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...)
// filtered to rn <= Limit.
type Config struct {
	Input     *arrow.Schema
	Partition []int
	Order     []SortKey
	Limit     int64
	// TimeCol >= 0 makes it a window Top-N: the partition includes an
	// event-time column (a window's end); a partition's ranking is final and
	// emitted once the watermark reaches that time.
	TimeCol int
}

// Ranker is the Top-N operator: it ranks rows per partition and keeps the first Limit. Ties in the
// order keep arrival order, so ranks are deterministic.
//
// Window Top-N emits each partition's final rows (insert-only) when the
// watermark reaches its time. Otherwise the output is a changelog, as
// Flink's append-only Top-N: a row entering the top at rank r emits, for
// every rank from r on whose row changed, -U of the old row and +U of the
// new one (+I for a rank seen the first time).
type Ranker struct {
	cfg    Config
	mem    memory.Allocator
	tbl    *hash.Table
	store  *rowstore.Store
	lists  [][]int32 // per partition id: stored rows, best first
	ends   []int64   // per partition id: its time (window Top-N)
	seq    []int64   // per partition id: first appearance
	nseq   int64
	schema *arrow.Schema
	cmp    []func(a, b int32) int
	// Sort keys cached per stored row, for keys of integer, timestamp or
	// floating type: comparisons then touch no Arrow array.
	ikeys [][]int64
	fkeys [][]float64
	nulls [][]bool

	zeros []int64
	cols  []arrow.Array
	iota  []int32
}

// New validates cfg.
func New(cfg Config, mem memory.Allocator) (*Ranker, error) {
	if cfg.Limit < 1 {
		return nil, fmt.Errorf("Top-N needs a limit of at least 1, got %d", cfg.Limit)
	}
	if len(cfg.Order) == 0 {
		return nil, fmt.Errorf("ROW_NUMBER() needs ORDER BY")
	}
	var keys []hash.KeyCol
	for _, p := range cfg.Partition {
		kc, err := hash.NewKeyCol(cfg.Input.Field(p).Type)
		if err != nil {
			return nil, err
		}
		keys = append(keys, kc)
	}
	fields := append(append([]arrow.Field{}, cfg.Input.Fields()...), arrow.Field{Name: "rn", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	t := &Ranker{cfg: cfg, mem: mem, tbl: hash.NewTable(keys), store: &rowstore.Store{}, schema: arrow.NewSchema(fields, nil)}
	t.ikeys = make([][]int64, len(cfg.Order))
	t.fkeys = make([][]float64, len(cfg.Order))
	t.nulls = make([][]bool, len(cfg.Order))
	for i, o := range cfg.Order {
		var c func(a, b int32) int
		switch cfg.Input.Field(o.Col).Type.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.TIMESTAMP:
			c = cachedCmp(&t.ikeys[i], &t.nulls[i], o)
		case arrow.FLOAT32, arrow.FLOAT64:
			c = cachedCmp(&t.fkeys[i], &t.nulls[i], o)
		default:
			var err error
			if c, err = t.comparator(o); err != nil {
				return nil, err
			}
		}
		t.cmp = append(t.cmp, c)
	}
	return t, nil
}

// cachedCmp compares stored rows by a cached key column.
func cachedCmp[T int64 | float64](keys *[]T, nulls *[]bool, o SortKey) func(a, b int32) int {
	return func(a, b int32) int {
		an, bn := (*nulls)[a], (*nulls)[b]
		switch {
		case an && bn:
			return 0
		case an:
			if o.NullsFirst {
				return -1
			}
			return 1
		case bn:
			if o.NullsFirst {
				return 1
			}
			return -1
		}
		c := cmp.Compare((*keys)[a], (*keys)[b])
		if o.Desc {
			c = -c
		}
		return c
	}
}

// allCached reports whether every sort key is cached (numeric).
func (t *Ranker) allCached() bool {
	for i := range t.cfg.Order {
		if t.ikeys[i] == nil && t.fkeys[i] == nil && len(t.nulls[i]) > 0 {
			return false
		}
		switch t.cfg.Input.Field(t.cfg.Order[i].Col).Type.ID() {
		case arrow.STRING, arrow.BOOL:
			return false
		}
	}
	return true
}

// uncacheKeys drops the last cached row.
func (t *Ranker) uncacheKeys() {
	for i := range t.cfg.Order {
		t.nulls[i] = t.nulls[i][:len(t.nulls[i])-1]
		if n := len(t.ikeys[i]); n > 0 && n > len(t.nulls[i]) {
			t.ikeys[i] = t.ikeys[i][:n-1]
		}
		if n := len(t.fkeys[i]); n > 0 && n > len(t.nulls[i]) {
			t.fkeys[i] = t.fkeys[i][:n-1]
		}
	}
}

// cacheKeys appends the sort keys of row r of b for the stored row idx.
func (t *Ranker) cacheKeys(b *vector.Batch, r int32) {
	for i, o := range t.cfg.Order {
		arr := b.Column(o.Col)
		null := arr.IsNull(int(r))
		t.nulls[i] = append(t.nulls[i], null)
		switch a := arr.(type) {
		case *array.Int64:
			t.ikeys[i] = append(t.ikeys[i], a.Value(int(r)))
		case *array.Int32:
			t.ikeys[i] = append(t.ikeys[i], int64(a.Value(int(r))))
		case *array.Int16:
			t.ikeys[i] = append(t.ikeys[i], int64(a.Value(int(r))))
		case *array.Int8:
			t.ikeys[i] = append(t.ikeys[i], int64(a.Value(int(r))))
		case *array.Timestamp:
			t.ikeys[i] = append(t.ikeys[i], int64(a.Value(int(r))))
		case *array.Float64:
			t.fkeys[i] = append(t.fkeys[i], a.Value(int(r)))
		case *array.Float32:
			t.fkeys[i] = append(t.fkeys[i], float64(a.Value(int(r))))
		}
	}
}

// OutputSchema is the input columns then rn (BIGINT).
func (t *Ranker) OutputSchema() *arrow.Schema { return t.schema }

// Windowed reports whether the output is insert-only.
func (t *Ranker) Windowed() bool { return t.cfg.TimeCol >= 0 }

// comparator orders two stored rows by one sort key (NULLs per
// NullsFirst, regardless of direction).
func (t *Ranker) comparator(o SortKey) (func(a, b int32) int, error) {
	s := t.store
	col := o.Col
	get := func(ref int32) arrow.Array { return s.Batches[s.RowB[ref]].Column(col) }
	var cmpVal func(x, y arrow.Array, i, j int) int
	switch t.cfg.Input.Field(col).Type.ID() {
	case arrow.INT8:
		cmpVal = topnCmp[int8]
	case arrow.INT16:
		cmpVal = topnCmp[int16]
	case arrow.INT32:
		cmpVal = topnCmp[int32]
	case arrow.INT64:
		cmpVal = topnCmp[int64]
	case arrow.FLOAT32:
		cmpVal = topnCmp[float32]
	case arrow.FLOAT64:
		cmpVal = topnCmp[float64]
	case arrow.TIMESTAMP:
		cmpVal = topnCmp[arrow.Timestamp]
	case arrow.STRING:
		cmpVal = topnCmp[string]
	case arrow.BOOL:
		cmpVal = func(x, y arrow.Array, i, j int) int {
			a, b := x.(*array.Boolean).Value(i), y.(*array.Boolean).Value(j)
			switch {
			case a == b:
				return 0
			case !a:
				return -1
			}
			return 1
		}
	default:
		return nil, fmt.Errorf("ORDER BY a %s column is not supported", kernels.SQLTypeName(t.cfg.Input.Field(col).Type))
	}
	return func(a, b int32) int {
		x, y := get(a), get(b)
		i, j := int(s.RowR[a]), int(s.RowR[b])
		xn, yn := x.IsNull(i), y.IsNull(j)
		switch {
		case xn && yn:
			return 0
		case xn:
			if o.NullsFirst {
				return -1
			}
			return 1
		case yn:
			if o.NullsFirst {
				return 1
			}
			return -1
		}
		c := cmpVal(x, y, i, j)
		if o.Desc {
			c = -c
		}
		return c
	}, nil
}

func topnCmp[T cmp.Ordered](x, y arrow.Array, i, j int) int {
	return cmp.Compare(x.(interface{ Value(int) T }).Value(i), y.(interface{ Value(int) T }).Value(j))
}

// less orders stored rows; ties keep arrival order (the lower index).
func (t *Ranker) compare(a, b int32) int {
	for _, c := range t.cmp {
		if r := c(a, b); r != 0 {
			return r
		}
	}
	return cmp.Compare(a, b)
}

type topnOut struct {
	kind vector.RowKind
	row  int32
	rn   int64
}

// Add ranks the live rows of b. It returns the changelog (unwindowed) or
// nil (window Top-N emits on Advance). b stays owned by the caller.
func (t *Ranker) Add(b *vector.Batch) (*vector.Batch, error) {
	rows, err := op.InsertRows(b, &t.iota, "Top-N")
	if err != nil {
		return nil, err
	}
	n := len(rows)
	if n == 0 {
		return nil, nil
	}
	t.zeros = column.Grow(t.zeros, n)
	clear(t.zeros)
	t.cols = t.cols[:0]
	for _, p := range t.cfg.Partition {
		t.cols = append(t.cols, b.Column(p))
	}
	ids := t.tbl.Lookup(t.zeros, rows, t.cols, n)
	for len(t.lists) < t.tbl.Size() {
		t.lists = append(t.lists, nil)
		t.ends = append(t.ends, 0)
		t.seq = append(t.seq, 0)
	}
	for _, id := range t.tbl.NewIDs {
		t.seq[id] = t.nseq
		t.nseq++
	}
	var outs []topnOut
	var toKill []int32 // killed after the output is gathered
	for k, r := range rows {
		id := ids[k]
		if t.cfg.TimeCol < 0 && t.allCached() {
			// Reject a row worse than a full list's last before storing it.
			next := int32(len(t.store.RowB))
			t.cacheKeys(b, r)
			if l := t.lists[id]; int64(len(l)) >= t.cfg.Limit && t.compare(next, l[len(l)-1]) >= 0 {
				t.uncacheKeys()
				continue
			}
			t.uncacheKeys()
		}
		idx := t.store.Add(b, r, -1, t.cfg.TimeCol)
		t.cacheKeys(b, r)
		if t.cfg.TimeCol >= 0 {
			t.ends[id] = t.store.TS[idx]
			t.lists[id] = append(t.lists[id], idx)
			continue
		}
		list := t.lists[id]
		pos, _ := slices.BinarySearchFunc(list, idx, t.compare)
		if int64(pos) >= t.cfg.Limit {
			toKill = append(toKill, idx)
			continue
		}
		oldLen := len(list)
		list = slices.Insert(list, pos, idx)
		// After the insert, the row that held rank r (r >= pos) is at r+1.
		for rank := pos; rank < len(list) && int64(rank) < t.cfg.Limit; rank++ {
			if rank < oldLen {
				outs = append(outs, topnOut{vector.UpdateBefore, list[rank+1], int64(rank + 1)}, topnOut{vector.UpdateAfter, list[rank], int64(rank + 1)})
			} else {
				outs = append(outs, topnOut{vector.Insert, list[rank], int64(rank + 1)})
			}
		}
		if int64(len(list)) > t.cfg.Limit {
			toKill = append(toKill, list[len(list)-1])
			list = list[:t.cfg.Limit]
		}
		t.lists[id] = list
	}
	out, err := t.build(outs, true)
	for _, idx := range toKill {
		t.store.Kill(idx)
	}
	t.compact()
	return out, err
}

// Advance emits the final ranking of every window partition whose time the
// watermark reached, then frees it.
func (t *Ranker) Advance(wm int64) (*vector.Batch, error) {
	if t.cfg.TimeCol < 0 {
		return nil, nil
	}
	var due []int32
	for id, l := range t.lists {
		if len(l) > 0 && t.ends[id] <= wm && t.ends[id] != math.MinInt64 {
			due = append(due, int32(id))
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	slices.SortFunc(due, func(a, b int32) int {
		if c := cmp.Compare(t.ends[a], t.ends[b]); c != 0 {
			return c
		}
		return cmp.Compare(t.seq[a], t.seq[b])
	})
	var outs []topnOut
	for _, id := range due {
		l := t.lists[id]
		slices.SortFunc(l, t.compare)
		for rank, idx := range l {
			if int64(rank) < t.cfg.Limit {
				outs = append(outs, topnOut{vector.Insert, idx, int64(rank + 1)})
			}
		}
	}
	out, err := t.build(outs, false)
	for _, id := range due {
		for _, idx := range t.lists[id] {
			t.store.Kill(idx)
		}
		t.lists[id] = t.lists[id][:0]
	}
	t.tbl.Remove(due)
	t.compact()
	return out, err
}

func (t *Ranker) build(outs []topnOut, changelog bool) (*vector.Batch, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	refs := make([]int32, len(outs))
	for k, o := range outs {
		refs[k] = o.row
	}
	cols := make([]arrow.Array, 0, t.schema.NumFields())
	for c, f := range t.cfg.Input.Fields() {
		a, err := t.store.Gather(t.mem, f.Type, c, refs)
		if err != nil {
			for _, x := range cols {
				x.Release()
			}
			return nil, err
		}
		cols = append(cols, a)
	}
	rb := array.NewInt64Builder(t.mem)
	for _, o := range outs {
		rb.Append(o.rn)
	}
	cols = append(cols, rb.NewArray())
	rb.Release()
	rec := array.NewRecordBatch(t.schema, cols, int64(len(outs)))
	for _, c := range cols {
		c.Release()
	}
	b := vector.New(rec)
	if changelog {
		b.Kinds = make([]vector.RowKind, len(outs))
		for k, o := range outs {
			b.Kinds[k] = o.kind
		}
	}
	return b, nil
}

// compact drops dead stored rows and remaps the partition lists and the
// cached sort keys.
func (t *Ranker) compact() {
	remap := t.store.Compact()
	if remap == nil {
		return
	}
	for id, l := range t.lists {
		for k, idx := range l {
			l[k] = remap[idx]
		}
		t.lists[id] = l
	}
	for i := range t.cfg.Order {
		keep := func(n int) bool { return n < len(remap) && remap[n] >= 0 }
		nk := 0
		for n := range t.nulls[i] {
			if !keep(n) {
				continue
			}
			t.nulls[i][nk] = t.nulls[i][n]
			if t.ikeys[i] != nil {
				t.ikeys[i][nk] = t.ikeys[i][n]
			}
			if t.fkeys[i] != nil {
				t.fkeys[i][nk] = t.fkeys[i][n]
			}
			nk++
		}
		t.nulls[i] = t.nulls[i][:nk]
		if t.ikeys[i] != nil {
			t.ikeys[i] = t.ikeys[i][:nk]
		}
		if t.fkeys[i] != nil {
			t.fkeys[i] = t.fkeys[i][:nk]
		}
	}
}

// Close releases retained rows.
func (t *Ranker) Close() error {
	for i, b := range t.store.Batches {
		if b != nil {
			b.Release()
			t.store.Batches[i] = nil
		}
	}
	return nil
}

// KeyColumns are the input columns of the PARTITION BY key.
func (t *Ranker) KeyColumns() []int { return append([]int(nil), t.cfg.Partition...) }

// OutputKeyColumns: the input columns pass through in place.
func (t *Ranker) OutputKeyColumns() []int { return t.KeyColumns() }

var (
	_ op.Operator         = (*Ranker)(nil)
	_ op.WatermarkHandler = (*Ranker)(nil)
	_ op.Closer           = (*Ranker)(nil)
	_ op.Stateful         = (*Ranker)(nil)
	_ op.Keyed            = (*Ranker)(nil)
	_ op.KeyedOutput      = (*Ranker)(nil)
)

// Process ranks a batch; unwindowed Top-N emits its changelog.
func (t *Ranker) Process(b *vector.Batch, out op.Output) error {
	res, err := t.Add(b)
	b.Release()
	if err != nil || res == nil {
		return err
	}
	return out.Emit(res)
}

// OnWatermark emits the final rows of closed windows, then forwards.
func (t *Ranker) OnWatermark(wm int64, out op.Output) error {
	res, err := t.Advance(wm)
	if err != nil {
		return err
	}
	if res != nil {
		if err := out.Emit(res); err != nil {
			return err
		}
	}
	return out.EmitWatermark(wm)
}
