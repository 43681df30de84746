package nexmark

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

func TestKinds(t *testing.T) {
	var counts [3]int64
	for e := int64(0); e < 1000; e++ {
		k := KindOf(e)
		for _, kk := range Kinds {
			if got, want := CountOfKind(e, kk), counts[kk]; got != want {
				t.Fatalf("CountOfKind(%d, %s) = %d, want %d", e, kk, got, want)
			}
			n := NextOfKind(e, kk)
			if KindOf(n) != kk || n < e {
				t.Fatalf("NextOfKind(%d, %s) = %d", e, kk, n)
			}
			for x := e; x < n; x++ {
				if KindOf(x) == kk {
					t.Fatalf("NextOfKind(%d, %s) = %d skips %d", e, kk, n, x)
				}
			}
		}
		counts[k]++
	}
	if counts != [3]int64{20, 60, 920} {
		t.Fatalf("1000 events: %v persons/auctions/bids, want 20/60/920", counts)
	}
}

// TestStream checks the stream's invariants: ids refer to persons and
// auctions already in the stream, values are in their ranges, time
// advances at the configured rate, and a seed defines the stream.
func TestStream(t *testing.T) {
	cfg := Config{Seed: 7, Rate: 1000, BaseTime: DefaultBaseTime}
	g := NewGenerator(cfg)
	var p Person
	var a Auction
	var b Bid
	newestPerson, newestAuction := int64(-1), int64(-1)
	hot := 0
	for e := int64(0); e < 200_000; e++ {
		switch KindOf(e) {
		case KindPerson:
			g.Person(e, &p)
			if p.ID != newestPerson+1 && !(newestPerson < 0 && p.ID == FirstPersonID) {
				t.Fatalf("event %d: person %d after %d", e, p.ID, newestPerson)
			}
			newestPerson = p.ID
			if p.DateTime != cfg.Time(e) || len(p.Email) != 17 || len(p.CreditCard) != 19 || len(p.Name) == 0 || len(p.State) != 2 {
				t.Fatalf("event %d: bad person %+v", e, p)
			}
		case KindAuction:
			g.Auction(e, &a)
			if a.ID != newestAuction+1 && !(newestAuction < 0 && a.ID == FirstAuctionID) {
				t.Fatalf("event %d: auction %d after %d", e, a.ID, newestAuction)
			}
			newestAuction = a.ID
			if a.Seller < FirstPersonID || a.Seller > newestPerson {
				t.Fatalf("event %d: seller %d, newest person %d", e, a.Seller, newestPerson)
			}
			if a.Category < FirstCategoryID || a.Category >= FirstCategoryID+Categories || a.Expires <= a.DateTime || a.Reserve < a.InitialBid {
				t.Fatalf("event %d: bad auction %+v", e, a)
			}
		case KindBid:
			g.Bid(e, &b)
			if b.Auction < FirstAuctionID || b.Auction > newestAuction {
				t.Fatalf("event %d: bid for auction %d, newest %d", e, b.Auction, newestAuction)
			}
			if b.Bidder < FirstPersonID || b.Bidder > newestPerson {
				t.Fatalf("event %d: bidder %d, newest person %d", e, b.Bidder, newestPerson)
			}
			if b.Price < 100 || b.Price > 100_000_000 || b.DateTime != cfg.Time(e) || len(b.Extra) < 40 {
				t.Fatalf("event %d: bad bid %+v", e, b)
			}
			if b.Auction%100 == 0 {
				hot++
			}
		}
	}
	// Half of the bids go to hot auctions (a multiple of 100).
	if bids := CountOfKind(200_000, KindBid); hot < int(bids)*45/100 || hot > int(bids)*56/100 {
		t.Fatalf("%d of %d bids for hot auctions", hot, bids)
	}
	line := func(seed int64, e int64) string {
		b, _ := NewGenerator(Config{Seed: seed, Rate: 1000, BaseTime: DefaultBaseTime}).AppendEvent(nil, e)
		return string(b)
	}
	if line(7, 12345) != line(7, 12345) || line(7, 12345) == line(8, 12345) {
		t.Fatal("the seed does not define the stream")
	}
}

// table builds a nexmark table of kind k with all its columns.
func table(t testing.TB, k Kind, opts map[string]string, p, subtask int) *connectors.Table {
	t.Helper()
	var fs []arrow.Field
	for _, f := range tableFields[k] {
		typ := arrow.DataType(arrow.PrimitiveTypes.Int64)
		if f.kind == fString {
			typ = arrow.BinaryTypes.String
		}
		fs = append(fs, arrow.Field{Name: f.name, Type: typ, Nullable: true})
	}
	all := map[string]string{"connector": "nexmark", "table": k.String()}
	for key, v := range opts {
		all[key] = v
	}
	o, err := spec.Validate(all)
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema(fs, nil)
	return &connectors.Table{Name: k.String(), Schema: schema, Options: o, EventTimeCol: schema.FieldIndices("dateTime")[0],
		WatermarkLag: 4000, Runtime: connectors.Runtime{BatchSize: 100, Mem: memory.NewGoAllocator(), Parallelism: p, Subtask: subtask}}
}

// rowsOf renders a batch's rows as text, one per row.
func rowsOf(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		var parts []string
		for _, c := range rec.Columns() {
			parts = append(parts, c.ValueStr(i))
		}
		out[i] = strings.Join(parts, "|")
	}
	return out
}

// expected renders the events of kind k below n as the source would.
func expected(k Kind, n int64, cfg Config) []string {
	g := NewGenerator(cfg)
	var out []string
	for e := NextOfKind(0, k); e < n; e = NextOfKind(e+1, k) {
		var r row
		switch k {
		case KindPerson:
			var p Person
			g.Person(e, &p)
			r.person(&p)
		case KindAuction:
			var a Auction
			g.Auction(e, &a)
			r.auction(&a)
		default:
			var b Bid
			g.Bid(e, &b)
			r.bid(&b)
		}
		var parts []string
		for i, f := range tableFields[k] {
			if f.kind == fString {
				parts = append(parts, string(r.strs[i]))
			} else {
				parts = append(parts, fmt.Sprint(r.ints[i]))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// run runs a source to its end (or until onBarrier returns true after a
// barrier), returning its rows and checking watermarks. With a Barriers
// set, barrier 1 is requested once 1000 rows were emitted.
func run(t *testing.T, s *Source, onBarrier func(id uint64) bool) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rows []string
	lastTS, lastWM := int64(-1<<63), int64(-1<<63)
	requested := false
	err := s.Run(ctx, func(m engine.Message) error {
		switch m.Kind {
		case engine.KindData:
			ts := m.Batch.Column(s.table.EventTimeCol).(*array.Int64)
			for i := 0; i < ts.Len(); i++ {
				if ts.Value(i) < lastTS {
					t.Fatalf("event time went back from %d to %d", lastTS, ts.Value(i))
				}
				lastTS = ts.Value(i)
				if m.Batch.RowWatermark[i] > ts.Value(i)-4000 {
					t.Fatalf("row watermark %d above ts %d - lag", m.Batch.RowWatermark[i], ts.Value(i))
				}
			}
			rows = append(rows, rowsOf(m.Batch.Rec)...)
			m.Batch.Release()
			if len(rows) >= 1000 && s.barriers != nil && !requested {
				s.barriers.Request(1)
				requested = true
			}
		case engine.KindWatermark:
			if m.Watermark <= lastWM {
				t.Fatalf("watermark %d after %d", m.Watermark, lastWM)
			}
			lastWM = m.Watermark
		case engine.KindBarrier:
			if onBarrier != nil && onBarrier(m.Checkpoint) {
				cancel()
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	return rows
}

func sameRows(t *testing.T, got, want []string) {
	t.Helper()
	sort.Strings(got)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d differs:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// TestSourceParallel: the subtasks of any parallelism generate the whole
// table between them, each in event-time order.
func TestSourceParallel(t *testing.T) {
	const n = 30_000
	for _, k := range Kinds {
		want := expected(k, n, Config{Seed: 3, Rate: 1000, BaseTime: DefaultBaseTime})
		for _, p := range []int{1, 2, 3} {
			var got []string
			for i := 0; i < p; i++ {
				s, err := Connector{}.NewSource(table(t, k, map[string]string{"events": fmt.Sprint(n), "seed": "3", "events_per_second": "1000"}, p, i))
				if err != nil {
					t.Fatal(err)
				}
				rows := run(t, s.(*Source), nil)
				if p > 1 && len(rows) == 0 {
					t.Fatalf("%s: subtask %d of %d generated nothing", k, i, p)
				}
				got = append(got, rows...)
			}
			sameRows(t, got, want)
		}
	}
}

// TestSourceCheckpoint stops the subtasks at a barrier, restores from
// their checkpoint at another parallelism and checks that the rows before
// and after add up to the table exactly once.
func TestSourceCheckpoint(t *testing.T) {
	const n = 20_000
	opts := map[string]string{"events": fmt.Sprint(n), "events_per_second": "1000"}
	want := expected(KindBid, n, Config{Rate: 1000, BaseTime: DefaultBaseTime})
	for _, c := range []struct{ before, after int }{{1, 1}, {2, 3}, {3, 1}, {1, 2}} {
		store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := store.Begin(1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var mu sync.Mutex
		for i := 0; i < c.before; i++ {
			s, _ := Connector{}.NewSource(table(t, KindBid, opts, c.before, i))
			src := s.(*Source)
			b := engine.NewBarriers()
			src.SetBarriers(b)
			rows := run(t, src, func(id uint64) bool {
				snap := &engine.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: memory.DefaultAllocator,
					Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return w.Part("source_bid", i, slots) }}
				mu.Lock()
				defer mu.Unlock()
				if err := src.SnapshotState(snap); err != nil {
					t.Fatal(err)
				}
				return true
			})
			got = append(got, rows...)
		}
		if err := w.Commit(checkpoint.Meta{Job: "test"}); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || len(got) >= len(want) {
			t.Fatalf("%d rows before the barrier", len(got))
		}
		cp, err := store.Open(1)
		if err != nil {
			t.Fatal(err)
		}
		var parts []*checkpoint.Part
		for i := 0; i < c.before; i++ {
			part, err := cp.ReadPart("source_bid", i)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, part)
		}
		for i := 0; i < c.after; i++ {
			s, _ := Connector{}.NewSource(table(t, KindBid, opts, c.after, i))
			src := s.(*Source)
			if err := src.RestoreState(&engine.Restore{ID: 1, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: c.after, Subtask: i, Parts: parts}); err != nil {
				t.Fatal(err)
			}
			got = append(got, run(t, src, nil)...)
		}
		t.Run(fmt.Sprintf("p%d_to_p%d", c.before, c.after), func(t *testing.T) { sameRows(t, got, want) })
	}
}

func TestColumns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "DATETIME", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "price", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	tab := table(t, KindBid, map[string]string{"events": "100"}, 1, 0)
	tab.Schema, tab.EventTimeCol = schema, 0
	s, err := Connector{}.NewSource(tab)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = s.Run(context.Background(), func(m engine.Message) error {
		if m.Kind == engine.KindData {
			if m.Batch.Column(0).DataType().ID() != arrow.TIMESTAMP {
				t.Fatalf("dateTime is %s", m.Batch.Column(0).DataType())
			}
			n += m.Batch.NumRows()
			m.Batch.Release()
		}
		return nil
	})
	if err != nil || n != 92 {
		t.Fatalf("%d rows, %v; want 92", n, err)
	}
	for _, c := range []struct {
		field arrow.Field
		err   string
	}{
		{arrow.Field{Name: "seller", Type: arrow.PrimitiveTypes.Int64}, "table bid has no column seller (its columns: auction, bidder, price, channel, url, dateTime, extra)"},
		{arrow.Field{Name: "price", Type: arrow.PrimitiveTypes.Int32}, "column price of table bid must be BIGINT, not int32"},
	} {
		tab.Schema = arrow.NewSchema([]arrow.Field{c.field}, nil)
		if _, err := (Connector{}).NewSource(tab); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("got %v, want %q", err, c.err)
		}
	}
	if _, err := spec.Validate(map[string]string{"connector": "nexmark", "table": "bids"}); err == nil || !strings.Contains(err.Error(), "'bids' is not one of") {
		t.Errorf("table 'bids': %v", err)
	}
}

// TestPace: a paced table emits no event before its time on the wall
// clock.
func TestPace(t *testing.T) {
	base := time.Now().UnixMilli() + 50
	tab := table(t, KindBid, map[string]string{"events": "300", "events_per_second": "1000", "pace": "true", "base_time_ms": fmt.Sprint(base)}, 1, 0)
	tab.Runtime.Linger = 5 * time.Millisecond
	s, err := Connector{}.NewSource(tab)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n := 0
	err = s.Run(context.Background(), func(m engine.Message) error {
		if m.Kind != engine.KindData {
			return nil
		}
		now := time.Now().UnixMilli()
		ts := m.Batch.Column(tab.EventTimeCol).(*array.Int64)
		for i := 0; i < ts.Len(); i++ {
			if ts.Value(i) > now {
				t.Errorf("event at %d emitted at %d", ts.Value(i), now)
			}
		}
		n += ts.Len()
		m.Batch.Release()
		return nil
	})
	if err != nil || n != 276 {
		t.Fatalf("%d rows, %v", n, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("300 events at 1000/s took %s", d)
	}
}
