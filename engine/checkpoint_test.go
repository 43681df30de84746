package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/window"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

var genSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// genSource emits rows i = next..n-1 (key base+i%5, ts i*10 with jitter)
// in batches of random size, per-row watermarks lag 30 ms; its state is
// next and its partition's max ts.
type genSource struct {
	n, base  int
	seed     uint64
	next     int
	maxTS    int64
	barriers *Barriers
	delay    time.Duration
}

func (g *genSource) ts(i int) int64 { return int64(i)*10 - int64((i*7919)%5)*10 }

func (g *genSource) Run(ctx context.Context, emit func(Message) error) error {
	rng := rand.New(rand.NewPCG(g.seed, uint64(g.next)))
	for g.next < g.n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m := min(1+rng.IntN(40), g.n-g.next)
		kb, tb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
		rwm := make([]int64, m)
		for j := range m {
			i := g.next + j
			kb.Append(int64(g.base + i%5))
			tb.Append(g.ts(i))
			rwm[j] = g.maxTS - 30
			g.maxTS = max(g.maxTS, g.ts(i))
		}
		k, ts := kb.NewArray(), tb.NewArray()
		kb.Release()
		tb.Release()
		b := vector.New(array.NewRecordBatch(genSchema, []arrow.Array{k, ts}, int64(m)))
		k.Release()
		ts.Release()
		b.RowWatermark = rwm
		g.next += m
		if err := emit(Message{Kind: KindData, Batch: b}); err != nil {
			return err
		}
		if err := emit(Message{Kind: KindWatermark, Watermark: g.maxTS - 30}); err != nil {
			return err
		}
		for {
			id, ok := g.barriers.Next()
			if !ok {
				break
			}
			if err := emit(Message{Kind: KindBarrier, Checkpoint: id}); err != nil {
				return err
			}
		}
		time.Sleep(g.delay)
	}
	return nil
}

func (g *genSource) SetBarriers(b *Barriers) { g.barriers = b }

var genSlots = []checkpoint.Slot{{Name: "pos", Raw: true, Values: []arrow.Field{
	{Name: "next", Type: arrow.PrimitiveTypes.Int64}, {Name: "max_ts", Type: arrow.PrimitiveTypes.Int64}}}}

func (g *genSource) SnapshotState(s *Snapshot) error {
	p, err := s.Open(genSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(s.Mem, p.Schema())
	defer b.Release()
	b.Raw("pos")
	b.Value("next").(*array.Int64Builder).Append(int64(g.next))
	b.Value("max_ts").(*array.Int64Builder).Append(g.maxTS)
	rec, _ := b.NewRecord()
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		return err
	}
	return p.Close()
}

func (g *genSource) RestoreState(r *Restore) error {
	for _, p := range r.Parts {
		for _, rec := range p.Records {
			g.next = int(checkpoint.Column(rec, "next").(*array.Int64).Value(0))
			g.maxTS = checkpoint.Column(rec, "max_ts").(*array.Int64).Value(0)
		}
	}
	return nil
}

// published is the committed output of a memSink, shared by its
// incarnations as a database would be.
type published struct {
	mu   sync.Mutex
	rows []string
	txns map[string]bool
}

// memSink is a two-phase sink over published: a transaction is a list of
// rows named run/seq; its state lists the pre-committed ones with their rows.
type memSink struct {
	db     *published
	run    string
	seq    int
	open   []string
	mu     sync.Mutex
	staged []memTxn
}

type memTxn struct {
	ckpt uint64
	name string
	rows []string
}

func (s *memSink) Write(b *vector.Batch) error {
	defer b.Release()
	for i := 0; i < b.NumRows(); i++ {
		var row string
		for c := 0; c < int(b.Rec.NumCols()); c++ {
			row += fmt.Sprintf("%v,", b.Column(c).GetOneForMarshal(i))
		}
		s.open = append(s.open, row)
	}
	return nil
}
func (s *memSink) Flush() error             { return nil }
func (s *memSink) Close() error             { return nil }
func (s *memSink) StartTransactions() error { return nil }
func (s *memSink) Abort() error             { s.open = nil; return nil }
func (s *memSink) PreCommit() error {
	if len(s.open) == 0 {
		return nil
	}
	s.seq++
	s.mu.Lock()
	s.staged = append(s.staged, memTxn{name: fmt.Sprintf("%s/%d", s.run, s.seq), rows: s.open})
	s.mu.Unlock()
	s.open = nil
	return nil
}

var memSlots = []checkpoint.Slot{{Name: "txn", Raw: true, Values: []arrow.Field{
	{Name: "ckpt", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "row", Type: arrow.BinaryTypes.String}}}}

func (s *memSink) SnapshotState(snap *Snapshot) error {
	s.mu.Lock()
	for i := range s.staged {
		if s.staged[i].ckpt == 0 {
			s.staged[i].ckpt = snap.ID
		}
	}
	staged := slices.Clone(s.staged)
	s.mu.Unlock()
	p, err := snap.Open(memSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	for _, t := range staged {
		for _, r := range t.rows {
			b.Raw("txn")
			b.Value("ckpt").(*array.Int64Builder).Append(int64(t.ckpt))
			b.Value("name").(*array.StringBuilder).Append(t.name)
			b.Value("row").(*array.StringBuilder).Append(r)
		}
	}
	rec, _ := b.NewRecord()
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		return err
	}
	return p.Close()
}

func (s *memSink) publish(t memTxn) {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if !s.db.txns[t.name] {
		s.db.txns[t.name] = true
		s.db.rows = append(s.db.rows, t.rows...)
	}
}

func (s *memSink) Commit(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.staged) > 0 && s.staged[0].ckpt != 0 && s.staged[0].ckpt <= id {
		s.publish(s.staged[0])
		s.staged = s.staged[1:]
	}
	return nil
}

func (s *memSink) RestoreState(r *Restore) error {
	var order []string
	rows := map[string][]string{}
	for _, p := range r.Parts {
		for _, rec := range p.Records {
			names := checkpoint.Column(rec, "name").(*array.String)
			vals := checkpoint.Column(rec, "row").(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				n := names.Value(i)
				if _, ok := rows[n]; !ok {
					order = append(order, n)
				}
				rows[n] = append(rows[n], vals.Value(i))
			}
		}
	}
	for _, n := range order {
		s.publish(memTxn{name: n, rows: rows[n]})
	}
	return nil
}

// ckJob is a union of two generators into a tumbling count per key.
func ckJob(t *testing.T, db *published, run string, delay time.Duration) (*Pipeline, *memSink) {
	return ckUnion(t, db, run, &genSource{n: 1500, base: 0, seed: 1, delay: delay}, &genSource{n: 1100, base: 10, seed: 2, delay: delay})
}

// ckSelfJob is a union of one generator with itself (one source read by
// two nodes) into a tumbling count per key.
func ckSelfJob(t *testing.T, db *published, run string, delay time.Duration) (*Pipeline, *memSink) {
	g := &genSource{n: 1500, base: 0, seed: 1, delay: delay}
	return ckUnion(t, db, run, g, g)
}

func ckUnion(t *testing.T, db *published, run string, a, b Source) (*Pipeline, *memSink) {
	t.Helper()
	u := &Node{Binary: op.Union{}, Names: []string{"union"},
		Inputs: []*Node{
			{Source: a, SourceName: "a"},
			{Source: b, SourceName: "b"},
		}}
	wa, err := window.New(window.Config{Input: genSchema, TimeCol: 1, Keys: []int{0},
		Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 100},
		Aggs:   []agg.Spec{{Func: agg.CountStar, Name: "c"}}}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	u.Ops = []Operator{wa}
	u.Names = []string{"window_agg", "union"}
	sink := &memSink{db: db, run: run}
	return &Pipeline{Root: u, Sink: sink, SinkName: "out"}, sink
}

// TestCheckpointRestoreExactlyOnce stops a job at random moments (pending
// work aborted, as a crash leaves it), restarts it from its newest
// checkpoint each time, and compares the committed output with an
// uninterrupted run: same rows, each once.
func TestCheckpointRestoreExactlyOnce(t *testing.T) {
	checkRestoreExactlyOnce(t, ckJob)
}

// TestCheckpointRestoreSharedSource is the same with one source read by
// both inputs of the union: it runs once, checkpoints once, and both
// inputs receive every row (each count is doubled).
func TestCheckpointRestoreSharedSource(t *testing.T) {
	checkRestoreExactlyOnce(t, ckSelfJob)
}

func checkRestoreExactlyOnce(t *testing.T, ckJob func(t *testing.T, db *published, run string, delay time.Duration) (*Pipeline, *memSink)) {
	want := &published{txns: map[string]bool{}}
	p, _ := ckJob(t, want, "ref", 0)
	store0, _ := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if _, err := RunJob(context.Background(), []*Pipeline{p}, &CheckpointConfig{Store: store0, Interval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if len(want.rows) == 0 {
		t.Fatal("no output")
	}
	slices.Sort(want.rows)

	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 9))
		store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		db := &published{txns: map[string]bool{}}
		var completed int
		for run := 0; ; run++ {
			p, _ := ckJob(t, db, fmt.Sprint(run), 200*time.Microsecond)
			cfg := &CheckpointConfig{Store: store, Interval: 2 * time.Millisecond, Fingerprint: "f",
				OnComplete: func(uint64) { completed++ }}
			if id, ok, err := store.Latest(); err != nil {
				t.Fatal(err)
			} else if ok {
				if cfg.Restore, err = store.Open(id); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5+rng.IntN(40))*time.Millisecond)
			if run >= 20 {
				ctx, cancel = context.WithCancel(context.Background())
			}
			st, err := RunJob(ctx, []*Pipeline{p}, cfg)
			cancel()
			if err != nil {
				t.Fatalf("seed %d run %d: %v", seed, run, err)
			}
			if !st[0].Interrupted {
				break
			}
		}
		got := slices.Clone(db.rows)
		slices.Sort(got)
		if !slices.Equal(got, want.rows) {
			t.Fatalf("seed %d: %d committed rows, want %d; %s", seed, len(got), len(want.rows), diffRows(got, want.rows))
		}
		if completed < 3 {
			t.Errorf("seed %d: only %d checkpoints completed", seed, completed)
		}
	}
}

// diffRows names a few rows only one side has.
func diffRows(got, want []string) string {
	count := map[string]int{}
	for _, r := range got {
		count[r]++
	}
	for _, r := range want {
		count[r]--
	}
	var extra, missing []string
	for r, n := range count {
		for ; n > 0; n-- {
			extra = append(extra, r)
		}
		for ; n < 0; n++ {
			missing = append(missing, r)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return fmt.Sprintf("extra %d %q, missing %d %q", len(extra), extra, len(missing), missing)
}
