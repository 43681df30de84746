package groupagg

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// The retracting group aggregate: Agg over a changelog input
// (Config.Retract), as Flink's group aggregate with retraction.
//
//   - +I and +U rows accumulate, -U and -D rows retract. COUNT, SUM and AVG
//     retract arithmetically (integer and decimal sums stay exact; a float
//     sum subtracts with the same compensated two-sum as it adds, see
//     kernels/agg); MIN and MAX keep each group's values as a multiset
//     (value → count), so retracting the extreme falls back to the next
//     value; COUNT(DISTINCT x) keeps value → count.
//   - Each group counts its rows. The output is a changelog with one change
//     per input row, in row order (the same at any batch size): a row that
//     creates a group emits +I; a row that changes the group's values emits
//     -U (old) and +U (new), one that does not change them nothing; a row
//     that retracts the group's last row emits -D with the values the group
//     had, and the group is forgotten (a later row creates it again).
//   - A retraction the aggregate can tell was never accumulated — for a
//     group that does not exist, of a MIN/MAX/COUNT(DISTINCT) value the
//     group does not hold, or of more non-NULL values than it counts — is
//     an error naming the row's kind and group key. Flink ignores a
//     retraction for a missing group (its state may have expired under a
//     TTL); Clink keeps all state (no TTL), so such a row means the input
//     is not a consistent changelog, and failing says so instead of
//     silently producing wrong results.

// addChanges is Add over a changelog.
func (g *Agg) addChanges(b *vector.Batch) (*vector.Batch, error) {
	rows := op.LiveRows(b, &g.iota)
	n := len(rows)
	if n == 0 {
		return nil, nil
	}
	ids := g.groupIDs(b, rows)
	g.touch(ids)
	// Row counts first: which entries retract, create or empty a group.
	ch := &g.ch
	ch.Neg, ch.Gone, g.born = column.Grow(ch.Neg, n), column.Grow(ch.Gone, n), column.Grow(g.born, n)
	ch.Fail = func(k int, what string) error { return g.retractErr(b, rows, k, what) }
	defer func() { ch.Fail = nil }() // b is the caller's after Add
	var emptied []int32
	for k, r := range rows {
		id := ids[k]
		neg := b.Kinds != nil && (b.Kinds[r] == vector.UpdateBefore || b.Kinds[r] == vector.Delete)
		ch.Neg[k], ch.Gone[k], g.born[k] = neg, false, false
		if !neg {
			g.born[k] = *g.nrows.At(id) == 0
			(*g.nrows.At(id))++
			continue
		}
		if *g.nrows.At(id) == 0 {
			return nil, ch.Fail(k, "a row of a group that holds none")
		}
		(*g.nrows.At(id))--
		if *g.nrows.At(id) == 0 {
			ch.Gone[k] = true
			emptied = append(emptied, id)
		}
	}
	g.changed = column.Grow(g.changed, n)
	clear(g.changed)
	for i, a := range g.racc {
		var arr arrow.Array
		if c := g.cfg.Aggs[i].Arg; c >= 0 {
			arr = b.Column(c)
		}
		if err := a.StepChanges(ids, arr, rows, ch, g.changed); err != nil {
			return nil, err
		}
	}
	var idx []int32
	var old []bool
	var kinds []vector.RowKind
	for k := range ids[:n] {
		switch {
		case g.born[k]:
			idx, old, kinds = append(idx, int32(k)), append(old, false), append(kinds, vector.Insert)
		case ch.Gone[k]:
			idx, old, kinds = append(idx, int32(k)), append(old, true), append(kinds, vector.Delete)
		case g.changed[k]:
			idx, old, kinds = append(idx, int32(k), int32(k)), append(old, true, false), append(kinds, vector.UpdateBefore, vector.UpdateAfter)
		}
	}
	out := g.output(b, rows, idx, old, kinds)
	// Forget the groups left empty (a group emptied and created again in
	// the batch stays); their accumulators are back in their initial
	// state, ready for the id's reuse.
	if len(emptied) > 0 {
		slices.Sort(emptied)
		drop := emptied[:0]
		for _, id := range slices.Compact(emptied) {
			if *g.nrows.At(id) == 0 {
				drop = append(drop, id)
			}
		}
		if err := g.forget(drop); err != nil {
			return nil, err
		}
		g.tbl.Remove(drop)
	}
	return out, nil
}

// retractErr is the error of entry k retracting what, which its group does
// not hold: the input is not a consistent changelog.
func (g *Agg) retractErr(b *vector.Batch, rows []int32, k int, what string) error {
	key := "[]"
	if len(g.cfg.Keys) > 0 {
		cols := make([]arrow.Array, len(g.cfg.Keys))
		for i, c := range g.cfg.Keys {
			cols[i] = vector.Take(g.mem, b.Column(c), rows[k:k+1])
		}
		key = opstate.RenderKeys(cols, 1)[0]
		column.ReleaseAll(cols)
	}
	return fmt.Errorf("GROUP BY over a changelog: a %s row of group %s retracts %s: the input retracts a row it never inserted", b.Kinds[rows[k]], key, what)
}
