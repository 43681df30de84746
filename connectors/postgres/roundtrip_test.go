package postgres

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

var rtSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// rtRow is a random row: key k-<0..keys>, n, v = tenths, a note with
// NULLs now and then.
func rtRow(rng *rand.Rand, keys int) []any {
	r := []any{fmt.Sprintf("k-%d", rng.IntN(keys)), int32(rng.IntN(100)), float64(rng.IntN(20000)-10000) / 10, fmt.Sprintf("note %d ✓", rng.IntN(1000))}
	if rng.IntN(5) == 0 {
		r[3] = nil
	}
	if rng.IntN(7) == 0 {
		r[2] = nil
	}
	return r
}

// rtLine is how PostgreSQL prints r (query's format).
func rtLine(r []any) string {
	f := func(v any) string {
		switch v := v.(type) {
		case nil:
			return "∅"
		case float64:
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return fmt.Sprint(v)
	}
	return f(r[0]) + "|" + f(r[1]) + "|" + f(r[2]) + "|" + f(r[3])
}

// batchSizes are the sizes the round trips split their input into: 1, 7,
// 1024 and random.
var batchSizes = []int{1, 7, 1024, -1}

// feed writes rows to s in batches of size (-1: random sizes), each
// padded with rows a random selection vector leaves out; kinds, when set,
// go along.
func feed(t *testing.T, s engine.Sink, mem memory.Allocator, rng *rand.Rand, rows [][]any, kinds []vector.RowKind, size int) {
	t.Helper()
	for at := 0; at < len(rows); {
		n := size
		if n < 0 {
			n = 1 + rng.IntN(300)
		}
		n = min(n, len(rows)-at)
		var phys [][]any
		var pk []vector.RowKind
		var sel []int32
		for i := 0; i < n; i++ {
			if rng.IntN(4) == 0 { // a row the selection drops
				phys = append(phys, rtRow(rng, 3))
				pk = append(pk, vector.Delete)
			}
			sel = append(sel, int32(len(phys)))
			phys = append(phys, rows[at+i])
			if kinds != nil {
				pk = append(pk, kinds[at+i])
			} else {
				pk = append(pk, vector.Insert)
			}
		}
		b := batch(mem, rtSchema, phys, nil)
		if kinds != nil {
			b.Kinds = pk
		}
		if len(sel) < len(phys) || rng.IntN(2) == 0 {
			b.Sel = sel
		}
		if err := s.Write(b); err != nil {
			t.Fatal(err)
		}
		at += n
	}
}

// Appended rows land once each, at every batch size with selection
// vectors, across several COPYs (batch_rows) and flushes.
func TestAppendRoundTrip(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	conn := srv.Connect(t, db)
	for _, size := range batchSizes {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			table := fmt.Sprintf("append_%d", size+1)
			srv.Exec(t, db, "CREATE TABLE "+table+" (k text, n integer, v double precision, note text)")
			rng := rand.New(rand.NewPCG(uint64(size+10), 3))
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			s := mustSink(t, url, table, rtSchema, "batch_rows", "333")
			var want []string
			for round := 0; round < 3; round++ {
				var rows [][]any
				for i := 0; i < 1000+rng.IntN(500); i++ {
					r := rtRow(rng, 50)
					rows = append(rows, r)
					want = append(want, rtLine(r))
				}
				feed(t, s, mem, rng, rows, nil, size)
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			sameLines(t, table, query(t, conn, "SELECT k, n, v, note FROM "+table), want)
			if st := s.(*Sink).Stats(); st["rows_written"] != int64(len(want)) {
				t.Errorf("stats %v, want %d rows", st, len(want))
			}
			s.Close()
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// changelog makes a random changelog over keys as an updating aggregate
// emits it (+I a new key, -U/+U an update, -D a delete), and the table it
// leaves, computed here by replaying it.
func changelog(rng *rand.Rand, n, keys int) ([][]any, []vector.RowKind, map[string][]any) {
	live := map[string][]any{}
	var rows [][]any
	var kinds []vector.RowKind
	for len(rows) < n {
		r := rtRow(rng, keys)
		k := r[0].(string)
		old, ok := live[k]
		switch {
		case !ok:
			rows, kinds = append(rows, r), append(kinds, vector.Insert)
			live[k] = r
		case rng.IntN(5) == 0:
			rows, kinds = append(rows, old), append(kinds, vector.Delete)
			delete(live, k)
		default:
			rows, kinds = append(rows, old, r), append(kinds, vector.UpdateBefore, vector.UpdateAfter)
			live[k] = r
		}
	}
	return rows, kinds, live
}

// An upsert sink applies a changelog: the table ends as the replayed
// changelog says, at every batch size, with batch_rows cutting it into
// several statements and flushes in between.
func TestUpsertRoundTrip(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	conn := srv.Connect(t, db)
	for _, size := range batchSizes {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			table := fmt.Sprintf("upsert_%d", size+1)
			srv.Exec(t, db, "CREATE TABLE "+table+" (k text PRIMARY KEY, n integer, v double precision, note text)")
			// Rows of an earlier run: one is updated, one deleted, one kept.
			srv.Exec(t, db, "INSERT INTO "+table+" VALUES ('k-1', 1, 1, 'old'), ('k-2', 2, 2, 'old'), ('zz', 3, 3, 'kept')")
			rng := rand.New(rand.NewPCG(uint64(size+20), 5))
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			s := mustSink(t, url, table, rtSchema, "mode", "upsert", "primary_key", "k", "batch_rows", "37")
			rows, kinds, live := changelog(rng, 4000, 120)
			rows = append([][]any{{"k-1", int32(1), 1.0, "old"}, {"k-2", int32(2), 2.0, "old"}}, rows...)
			kinds = append([]vector.RowKind{vector.UpdateBefore, vector.Delete}, kinds...)
			if _, ok := live["k-1"]; !ok {
				live["k-1"] = []any{"k-1", int32(9), 9.5, nil}
				rows, kinds = append(rows, live["k-1"]), append(kinds, vector.UpdateAfter)
			}
			half := len(rows) / 2
			feed(t, s, mem, rng, rows[:half], kinds[:half], size)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			feed(t, s, mem, rng, rows[half:], kinds[half:], size)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			want := []string{"zz|3|3|kept"}
			for _, r := range live {
				want = append(want, rtLine(r))
			}
			sameLines(t, table, query(t, conn, "SELECT k, n, v, note FROM "+table), want)
			s.Close()
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}
