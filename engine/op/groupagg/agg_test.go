package groupagg

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/vector"
)

// TestGroupAggChangelog checks the updating aggregate's changelog against a
// row-at-a-time reference at several batch sizes, with selection vectors
// and NULL keys and values.
func TestGroupAggChangelog(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 30; iter++ {
		n := 1 + r.IntN(300)
		keys := make([]*string, n)
		vals := make([]*int64, n)
		live := make([]bool, n)
		for i := range keys {
			if r.IntN(8) > 0 {
				s := fmt.Sprintf("k%d", r.IntN(5))
				keys[i] = &s
			}
			if r.IntN(5) > 0 {
				v := r.Int64N(20) - 5
				vals[i] = &v
			}
			live[i] = r.IntN(4) > 0
		}
		want := groupAggReference(keys, vals, live)
		for _, bs := range []int{1, 7, 1024, 1 + r.IntN(50)} {
			got := groupAggRun(t, keys, vals, live, bs)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("iter %d batch %d:\ngot\n%s\nwant\n%s", iter, bs, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

type gaRef struct {
	n, cnt, sum int64
	hasSum      bool
	min, max    int64
}

func (g gaRef) String() string {
	s, lo, hi := "null", "null", "null"
	if g.hasSum {
		s, lo, hi = fmt.Sprint(g.sum), fmt.Sprint(g.min), fmt.Sprint(g.max)
	}
	return fmt.Sprintf("%d %d %s %s %s", g.n, g.cnt, s, lo, hi)
}

func groupAggReference(keys []*string, vals []*int64, live []bool) []string {
	state := map[string]*gaRef{}
	var out []string
	for i := range keys {
		if !live[i] {
			continue
		}
		k := "<null>"
		if keys[i] != nil {
			k = *keys[i]
		}
		g, ok := state[k]
		if !ok {
			g = &gaRef{}
			state[k] = g
		}
		old := *g
		g.n++
		if v := vals[i]; v != nil {
			g.cnt++
			if !g.hasSum {
				g.min, g.max = *v, *v
			}
			g.sum += *v
			g.hasSum = true
			g.min, g.max = min(g.min, *v), max(g.max, *v)
		}
		if !ok {
			out = append(out, "+I "+k+" "+g.String())
		} else if old != *g {
			out = append(out, "-U "+k+" "+old.String(), "+U "+k+" "+g.String())
		}
	}
	return out
}

func groupAggRun(t *testing.T, keys []*string, vals []*int64, live []bool, bs int) []string {
	return groupAggRunCut(t, keys, vals, live, bs, nil)
}

// groupAggRunCut is groupAggRun; after each batch, between (when set) may
// replace the aggregate (with one restored from a checkpoint).
func groupAggRunCut(t *testing.T, keys []*string, vals []*int64, live []bool, bs int, between func(*Agg, memory.Allocator) *Agg) []string {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	g, err := New(Config{Input: schema, Keys: []int{0}, Aggs: []agg.Spec{
		{Func: agg.CountStar, Arg: -1}, {Func: agg.Count, Arg: 1}, {Func: agg.Sum, Arg: 1}, {Func: agg.Min, Arg: 1}, {Func: agg.Max, Arg: 1},
	}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for from := 0; from < len(keys); from += bs {
		to := min(from+bs, len(keys))
		kb := array.NewStringBuilder(mem)
		vb := array.NewInt64Builder(mem)
		var sel []int32
		for i := from; i < to; i++ {
			if keys[i] == nil {
				kb.AppendNull()
			} else {
				kb.Append(*keys[i])
			}
			if vals[i] == nil {
				vb.AppendNull()
			} else {
				vb.Append(*vals[i])
			}
			if live[i] {
				sel = append(sel, int32(i-from))
			}
		}
		ka, va := kb.NewArray(), vb.NewArray()
		kb.Release()
		vb.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{ka, va}, int64(to-from))
		ka.Release()
		va.Release()
		b := vector.New(rec)
		if sel == nil {
			sel = []int32{}
		}
		b.Sel = sel
		ch, err := g.Add(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		if between != nil {
			g = between(g, mem)
		}
		if ch == nil {
			continue
		}
		ch.Rows(func(i int) {
			k := "<null>"
			if kc := ch.Column(0).(*array.String); kc.IsValid(i) {
				k = kc.Value(i)
			}
			var parts []string
			for c := 1; c < 6; c++ {
				col := ch.Column(c).(*array.Int64)
				if col.IsNull(i) {
					parts = append(parts, "null")
				} else {
					parts = append(parts, fmt.Sprint(col.Value(i)))
				}
			}
			out = append(out, ch.Kinds[i].String()+" "+k+" "+strings.Join(parts, " "))
		})
		ch.Release()
	}
	return out
}
