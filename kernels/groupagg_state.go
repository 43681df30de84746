package kernels

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// State slot of the unwindowed aggregate (docs/state-format.md): one keyed
// row per group with the key's typed columns (key_<name>) and each
// aggregate's accumulators (agg_<column>_<what>). Every group in the table
// has emitted (a group's first row emits +I), and the values it emitted
// last are those of its accumulators, so they are all the next changelog
// row needs. Over a changelog (Retract) a row also holds the group's
// number of rows (row_count, never 0: an emptied group is forgotten).
const SlotGroupAgg = "group_agg"

// colRowCount is the group_agg column of a group's row count (Retract).
const colRowCount = "row_count"

// stateFields are the value columns of the group_agg slot: the keys, the
// row count (Retract), then each aggregate's accumulators; accs[i] is the
// range of aggregate i.
func (g *GroupAgg) stateFields() (fields []arrow.Field, accs [][2]int) {
	for i, c := range g.cfg.Keys {
		fields = append(fields, arrow.Field{Name: "key_" + g.schema.Field(i).Name, Type: g.cfg.Input.Field(c).Type})
	}
	if g.cfg.Retract {
		fields = append(fields, arrow.Field{Name: colRowCount, Type: arrow.PrimitiveTypes.Int64})
	}
	for i, a := range g.accs {
		prefix := "agg_count_star_"
		if c := g.cfg.Aggs[i].Arg; c >= 0 {
			prefix = "agg_" + g.cfg.Input.Field(c).Name + "_"
		}
		from := len(fields)
		fields = append(fields, a.stateFields(prefix)...)
		accs = append(accs, [2]int{from, len(fields)})
	}
	uniqueStateNames(fields)
	return fields, accs
}

// uniqueStateNames renames value columns whose name is taken, compared
// case-insensitively as the state format requires (also against the fixed
// columns): the second "agg_x_sum" becomes "agg_x_sum_2". Names depend only
// on the operator's configuration, so a restore derives the same ones.
func uniqueStateNames(fields []arrow.Field) {
	taken := map[string]bool{}
	for _, f := range []string{checkpoint.ColSlot, checkpoint.ColKeyGroup, checkpoint.ColKey, checkpoint.ColWindowStart, checkpoint.ColWindowEnd} {
		taken[f] = true
	}
	for i, f := range fields {
		name := f.Name
		for n := 2; taken[strings.ToLower(name)]; n++ {
			name = fmt.Sprintf("%s_%d", f.Name, n)
		}
		taken[strings.ToLower(name)] = true
		fields[i].Name = name
	}
}

// StateSlots declares the slot of the aggregate's snapshot.
func (g *GroupAgg) StateSlots() []checkpoint.Slot {
	fields, _ := g.stateFields()
	return []checkpoint.Slot{{Name: SlotGroupAgg, Values: fields}}
}

// Snapshot writes every group into p, whose slots are StateSlots.
func (g *GroupAgg) Snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	fields, accs := g.stateFields()
	ids := make([]int32, 0, g.tbl.n)
	for id, live := range g.tbl.live {
		if live {
			ids = append(ids, int32(id))
		}
	}
	for lo := 0; lo < len(ids); lo += snapshotChunk {
		if err := g.snapshotChunk(p, mem, maxParallelism, fields, accs, ids[lo:min(lo+snapshotChunk, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

func (g *GroupAgg) snapshotChunk(p *checkpoint.PartWriter, mem memory.Allocator, maxPar int, fields []arrow.Field, accs [][2]int, ids []int32) error {
	vals := map[string]arrow.Array{}
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	keys := make([]arrow.Array, len(g.tbl.keys))
	for i, c := range g.tbl.keys {
		keys[i] = c.build(mem, ids)
		vals[fields[i].Name] = keys[i]
		owned = append(owned, keys[i])
	}
	groups, err := keyGroups(keys, len(ids), maxPar)
	if err != nil {
		return err
	}
	if g.cfg.Retract {
		c := int64Col(mem, len(ids), func(j int) int64 { return g.nrows[ids[j]] })
		vals[colRowCount] = c
		owned = append(owned, c)
	}
	for i, a := range g.accs {
		for j, col := range a.snapshot(mem, ids) {
			vals[fields[accs[i][0]+j].Name] = col
			owned = append(owned, col)
		}
	}
	return p.WriteSlot(checkpoint.SlotRows{Slot: SlotGroupAgg, KeyGroups: groups, Keys: RenderKeys(keys, len(ids)), Values: vals})
}

// keyGroups returns the key group of each of the n rows of the key columns.
func keyGroups(keys []arrow.Array, n, maxPar int) ([]int32, error) {
	hs, err := KeyHashes(keys, n)
	if err != nil {
		return nil, err
	}
	groups := make([]int32, n)
	for k, h := range hs {
		groups[k] = checkpoint.KeyGroupOf(h, maxPar)
	}
	return groups, nil
}

// Restore loads the groups of the parts' group_agg rows whose key group
// owns accepts (nil: all) into an empty aggregate.
func (g *GroupAgg) Restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if g.tbl.n > 0 {
		return fmt.Errorf("group aggregate: restore into a used aggregate")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	fields, accs := g.stateFields()
	for _, p := range parts {
		for _, rec := range p.Records {
			rows, err := stateSlotRows(rec, owns, SlotGroupAgg)
			if err == nil {
				err = g.restoreRows(newStateCols(rec, rows[SlotGroupAgg], mem), fields, accs)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p.Path, err)
			}
		}
	}
	return nil
}

func (g *GroupAgg) restoreRows(sc *stateCols, fields []arrow.Field, accs [][2]int) error {
	defer sc.release()
	m := len(sc.sel)
	if m == 0 {
		return nil
	}
	keys := make([]arrow.Array, len(g.cfg.Keys))
	for i, c := range g.cfg.Keys {
		var err error
		if keys[i], err = sc.typed(fields[i].Name, g.cfg.Input.Field(c).Type); err != nil {
			return err
		}
	}
	ids := slices.Clone(g.tbl.lookup(make([]int64, m), nil, keys, m))
	if len(g.tbl.newIDs) != m {
		return fmt.Errorf("%d groups repeat the key of another row", m-len(g.tbl.newIDs))
	}
	g.grow(g.tbl.size())
	for _, id := range ids {
		g.seen[id] = true
	}
	if g.cfg.Retract {
		n, err := sc.int64s(colRowCount)
		if err != nil {
			return err
		}
		for j, id := range ids {
			if n[j] <= 0 {
				return fmt.Errorf("state column %s: a group of %d rows", colRowCount, n[j])
			}
			g.nrows[id] = n[j]
		}
	}
	for i, a := range g.accs {
		cols := make([]arrow.Array, 0, accs[i][1]-accs[i][0])
		for _, f := range fields[accs[i][0]:accs[i][1]] {
			c, err := sc.typed(f.Name, f.Type)
			if err != nil {
				return err
			}
			cols = append(cols, c)
		}
		if err := a.restore(ids, cols); err != nil {
			return fmt.Errorf("state column %s: %w", fields[accs[i][0]].Name, err)
		}
	}
	return nil
}

// stateSlotRows sorts the rows of a state record by slot: keyed rows whose
// key group owns accepts (nil: all) and every raw row. A slot not in slots
// is an error.
func stateSlotRows(rec arrow.RecordBatch, owns func(int32) bool, slots ...string) (map[string][]int32, error) {
	slot, ok1 := rec.Column(0).(*array.String)
	kg, ok2 := rec.Column(1).(*array.Int32)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("not a state record: columns 0 and 1 are %s, %s", rec.Column(0).DataType(), rec.Column(1).DataType())
	}
	rows := make(map[string][]int32, len(slots))
	for _, s := range slots {
		rows[s] = nil
	}
	for i := range int(rec.NumRows()) {
		s := slot.Value(i)
		l, known := rows[s]
		if !known {
			return nil, fmt.Errorf("row %d: unknown slot %q (want one of %s)", i, s, strings.Join(slots, ", "))
		}
		if g := kg.Value(i); g == checkpoint.RawKeyGroup || owns == nil || owns(g) {
			rows[s] = append(l, int32(i))
		}
	}
	return rows, nil
}

// slotSel lists the rows of slot in a state record whose key group owns
// accepts (nil: all).
func slotSel(rec arrow.RecordBatch, owns func(int32) bool, slot string) ([]int32, error) {
	slots, ok1 := rec.Column(0).(*array.String)
	kg, ok2 := rec.Column(1).(*array.Int32)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("not a state record: columns 0 and 1 are %s, %s", rec.Column(0).DataType(), rec.Column(1).DataType())
	}
	var sel []int32
	for i := range int(rec.NumRows()) {
		if slots.Value(i) == slot && (owns == nil || owns(kg.Value(i))) {
			sel = append(sel, int32(i))
		}
	}
	return sel, nil
}

// stateCols reads value columns of the selected rows of a state record.
// The arrays are the record's (all rows selected, unless copy is set) or
// copies allocated from mem; release drops them.
type stateCols struct {
	rec   arrow.RecordBatch
	sel   []int32
	mem   memory.Allocator
	copy  bool
	owned []arrow.Array
}

func newStateCols(rec arrow.RecordBatch, sel []int32, mem memory.Allocator) *stateCols {
	return &stateCols{rec: rec, sel: sel, mem: mem}
}

// typed returns the named column of the selected rows, which must have
// type dt.
func (s *stateCols) typed(name string, dt arrow.DataType) (arrow.Array, error) {
	a := checkpoint.Column(s.rec, name)
	if a == nil {
		return nil, fmt.Errorf("no state column %q", name)
	}
	if !arrow.TypeEqual(a.DataType(), dt) {
		return nil, fmt.Errorf("state column %q is %s, want %s", name, a.DataType(), dt)
	}
	if len(s.sel) == a.Len() && !s.copy {
		a.Retain()
	} else {
		a = vector.Take(s.mem, a, s.sel)
	}
	s.owned = append(s.owned, a)
	return a, nil
}

// int64s returns a BIGINT column of the selected rows (NULL as 0).
func (s *stateCols) int64s(name string) ([]int64, error) {
	a, err := s.typed(name, arrow.PrimitiveTypes.Int64)
	if err != nil {
		return nil, err
	}
	return a.(*array.Int64).Int64Values(), nil
}

func (s *stateCols) release() {
	for _, a := range s.owned {
		a.Release()
	}
	s.owned = nil
}

// slotColumns reads the rows of slot in part whose key group owns accepts
// (nil: all) as one set of columns, fields (name and type each), allocated
// from mem; the caller releases them. With sortBy set (a BIGINT column),
// the rows are in its order: state whose order matters says so in a
// column, as the format's rows are in no particular order.
func slotColumns(part *checkpoint.Part, slot string, owns func(int32) bool, mem memory.Allocator, fields []arrow.Field, sortBy string) ([]arrow.Array, error) {
	per := make([][]arrow.Array, len(fields))
	release := func() {
		for _, l := range per {
			for _, a := range l {
				a.Release()
			}
		}
	}
	defer release()
	for _, rec := range part.Records {
		sel, err := slotSel(rec, owns, slot)
		if err != nil {
			return nil, err
		}
		sc := newStateCols(rec, sel, mem)
		if len(sc.sel) == 0 {
			continue
		}
		sc.copy = true
		for i, f := range fields {
			a, err := sc.typed(f.Name, f.Type)
			if err != nil {
				sc.release()
				return nil, err
			}
			a.Retain()
			per[i] = append(per[i], a)
		}
		sc.release()
	}
	if len(per) == 0 || len(per[0]) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, len(fields))
	var err error
	for i, l := range per {
		if len(l) == 1 {
			l[0].Retain()
			cols[i] = l[0]
		} else if cols[i], err = array.Concatenate(l, mem); err != nil {
			releaseAll(cols)
			return nil, fmt.Errorf("state column %q: %w", fields[i].Name, err)
		}
	}
	if sortBy == "" {
		return cols, nil
	}
	k := slices.IndexFunc(fields, func(f arrow.Field) bool { return f.Name == sortBy })
	by := cols[k].(*array.Int64).Int64Values()
	if slices.IsSorted(by) {
		return cols, nil
	}
	perm := make([]int32, len(by))
	for r := range perm {
		perm[r] = int32(r)
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return cmp.Compare(by[a], by[b]) })
	for i, c := range cols {
		cols[i] = vector.Take(mem, c, perm)
		c.Release()
	}
	return cols, nil
}

func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// Accumulator snapshots of the updating aggregate. Each accumulator
// describes its state as typed value columns named prefix+what, writes
// them for a list of groups and sets groups from them; a value is NULL
// where the group has none (the aggregate's result is NULL).

func (a *gaCount) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
}

func (a *gaCount) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	return []arrow.Array{int64Col(mem, len(ids), func(j int) int64 { return a.n[ids[j]] })}
}

func (a *gaCount) restore(ids []int32, cols []arrow.Array) error {
	n := cols[0].(*array.Int64).Int64Values()
	for j, id := range ids {
		a.n[id] = n[j]
	}
	return nil
}

// SUM keeps its sum (NULL before the first value); AVG its sum as avg_sum
// and the number of values as avg_count. Integer sums are exact
// DECIMAL(38, 0), decimal sums DECIMAL(38, s), float sums DOUBLE with the
// compensation in sum_err (the sum is sum + sum_err). Over a changelog a
// SUM counts its values too (sum_count: it is NULL again when all are
// retracted), and a float sum its non-finite values (sum_nan,
// sum_pos_inf, sum_neg_inf), kept apart from the finite sum.

// gaSumFields names the state columns of a SUM or AVG whose sum columns
// have types sums: the sums, the number of values (AVG, or SUM over a
// changelog), and the non-finite counts of a float sum over a changelog.
func gaSumFields(p string, avg, retract, float bool, sums ...arrow.DataType) []arrow.Field {
	names := []string{"sum", "sum_err"}
	count := "sum_count"
	if avg {
		p += "avg_"
		count = "count"
	}
	var f []arrow.Field
	for i, t := range sums {
		f = append(f, arrow.Field{Name: p + names[i], Type: t})
	}
	if avg || retract {
		f = append(f, arrow.Field{Name: p + count, Type: arrow.PrimitiveTypes.Int64})
	}
	if retract && float {
		for _, w := range []string{"sum_nan", "sum_pos_inf", "sum_neg_inf"} {
			f = append(f, arrow.Field{Name: p + w, Type: arrow.PrimitiveTypes.Int64})
		}
	}
	return f
}

// gaSumSnapshot appends the number of values (when counted) to the sum
// columns.
func gaSumSnapshot(mem memory.Allocator, counted bool, ids []int32, n []int64, cols ...arrow.Array) []arrow.Array {
	if counted {
		cols = append(cols, int64Col(mem, len(ids), func(j int) int64 { return n[ids[j]] }))
	}
	return cols
}

// gaSumCounts sets n from the count column cols[at] (when counted) or, for
// an insert-only SUM, to 1 where the sum is not NULL (its count only tells
// whether it has a value).
func gaSumCounts(counted bool, ids []int32, n []int64, cols []arrow.Array, at int) {
	for j, id := range ids {
		switch {
		case counted:
			n[id] = cols[at].(*array.Int64).Value(j)
		case cols[0].IsValid(j):
			n[id] = 1
		default:
			n[id] = 0
		}
	}
}

func (a *gaIntSum[T]) stateFields(p string) []arrow.Field {
	return gaSumFields(p, a.avg, a.retract, false, decSumType)
}

func (a *gaIntSum[T]) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	o := winNewFixed[decimal128.Num](mem, decSumType, len(ids))
	for j, id := range ids {
		if a.n[id] == 0 {
			o.setNull(j)
			continue
		}
		o.vals[j] = decimal128.New(a.hi[id], a.lo[id])
	}
	return gaSumSnapshot(mem, a.avg || a.retract, ids, a.n, o.finish())
}

func (a *gaIntSum[T]) restore(ids []int32, cols []arrow.Array) error {
	s := cols[0].(*array.Decimal128)
	for j, id := range ids {
		a.hi[id], a.lo[id] = 0, 0
		if s.IsValid(j) {
			v := s.Value(j)
			a.hi[id], a.lo[id] = v.HighBits(), v.LowBits()
		}
	}
	gaSumCounts(a.avg || a.retract, ids, a.n, cols, 1)
	return nil
}

func (a *gaFloatSum[T]) stateFields(p string) []arrow.Field {
	f64 := arrow.PrimitiveTypes.Float64
	return gaSumFields(p, a.avg, a.retract, true, f64, f64)
}

func (a *gaFloatSum[T]) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	cols := make([]arrow.Array, 2)
	for i, src := range [][]float64{a.s, a.c} {
		o := winNewFixed[float64](mem, arrow.PrimitiveTypes.Float64, len(ids))
		for j, id := range ids {
			if a.n[id] == 0 {
				o.setNull(j)
				continue
			}
			o.vals[j] = src[id]
		}
		cols[i] = o.finish()
	}
	cols = gaSumSnapshot(mem, a.avg || a.retract, ids, a.n, cols...)
	if a.retract {
		for w := range len(gaNonFinite{}) {
			cols = append(cols, int64Col(mem, len(ids), func(j int) int64 { return a.nf[ids[j]][w] }))
		}
	}
	return cols
}

func (a *gaFloatSum[T]) restore(ids []int32, cols []arrow.Array) error {
	for i, dst := range [][]float64{a.s, a.c} {
		c := cols[i].(*array.Float64)
		for j, id := range ids {
			dst[id] = 0
			if c.IsValid(j) {
				dst[id] = c.Value(j)
			}
		}
	}
	gaSumCounts(a.avg || a.retract, ids, a.n, cols, 2)
	if a.retract {
		for w := range len(gaNonFinite{}) {
			c := cols[3+w].(*array.Int64)
			for j, id := range ids {
				a.nf[id][w] = c.Value(j)
			}
		}
	}
	return nil
}

func (a *gaDecSum) stateFields(p string) []arrow.Field {
	return gaSumFields(p, a.avg, a.retract, false, &arrow.Decimal128Type{Precision: 38, Scale: a.dt.Scale})
}

func (a *gaDecSum) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	o := winNewFixed[decimal128.Num](mem, &arrow.Decimal128Type{Precision: 38, Scale: a.dt.Scale}, len(ids))
	for j, id := range ids {
		if a.n[id] == 0 {
			o.setNull(j)
			continue
		}
		o.vals[j] = a.sum[id]
	}
	return gaSumSnapshot(mem, a.avg || a.retract, ids, a.n, o.finish())
}

func (a *gaDecSum) restore(ids []int32, cols []arrow.Array) error {
	s := cols[0].(*array.Decimal128)
	for j, id := range ids {
		a.sum[id] = decimal128.Num{}
		if s.IsValid(j) {
			a.sum[id] = s.Value(j)
		}
	}
	gaSumCounts(a.avg || a.retract, ids, a.n, cols, 1)
	return nil
}

func (a *gaExt[T]) what() string {
	if a.max {
		return "max"
	}
	return "min"
}

func (a *gaExt[T]) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + a.what(), Type: a.t}}
}

func (a *gaExt[T]) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	return []arrow.Array{gaSnapshotOpt(mem, a.t, ids, a.v, a.has)}
}

func (a *gaExt[T]) restore(ids []int32, cols []arrow.Array) error {
	gaRestoreOpt(ids, cols[0], a.v, a.has)
	return nil
}

func (a *gaBoolExt) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + a.what(), Type: arrow.FixedWidthTypes.Boolean}}
}

func (a *gaBoolExt) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	o := winNewBool(mem, len(ids))
	for j, id := range ids {
		switch {
		case !a.has[id]:
			o.setNull(j)
		case a.v[id] == 1:
			o.bits[j>>3] |= 1 << (j & 7)
		}
	}
	return []arrow.Array{o.finish()}
}

func (a *gaBoolExt) restore(ids []int32, cols []arrow.Array) error {
	b := cols[0].(*array.Boolean)
	for j, id := range ids {
		a.v[id], a.has[id] = 0, b.IsValid(j)
		if a.has[id] && b.Value(j) {
			a.v[id] = 1
		}
	}
	return nil
}

// COUNT(DISTINCT x) keeps the sets as the window aggregate does: the
// values' texts, sorted, as LIST<STRING>.

func (a *gaDistinct) stateFields(p string) []arrow.Field {
	return (&aggDistinctState{}).stateFields(p + "distinct_")
}

func (a *gaDistinct) snapshot(mem memory.Allocator, ids []int32) []arrow.Array {
	return (&aggDistinctState{sets: a.sets}).snapshot(mem, ids)
}

func (a *gaDistinct) restore(ids []int32, cols []arrow.Array) error {
	return (&aggDistinctState{sets: a.sets}).restore(ids, cols)
}

// gaSnapshotOpt builds a column of type t from per-group values that are
// NULL where has is false.
func gaSnapshotOpt[T any](mem memory.Allocator, t arrow.DataType, ids []int32, v []T, has []bool) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	b.Reserve(len(ids))
	app := b.(interface{ Append(T) })
	for _, id := range ids {
		if has[id] {
			app.Append(v[id])
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// gaRestoreOpt sets per-group values and has from col (NULL: no value).
// Strings are copied: col's buffers belong to the checkpoint's record.
func gaRestoreOpt[T any](ids []int32, col arrow.Array, v []T, has []bool) {
	get := col.(interface{ Value(int) T })
	var zero T
	for j, id := range ids {
		v[id], has[id] = zero, col.IsValid(j)
		if !has[id] {
			continue
		}
		x := get.Value(j)
		if s, ok := any(x).(string); ok {
			x = any(strings.Clone(s)).(T)
		}
		v[id] = x
	}
}
