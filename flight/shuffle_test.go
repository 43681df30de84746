package flight

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

func testBatch(mem memory.Allocator, from, n int) *vector.Batch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("key-%d", i))
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(int64(i))
		}
	}
	return vector.New(b.NewRecordBatch())
}

// TestShuffleStream: rows (with a selection, per-row watermarks and
// changelog kinds), watermarks, watermark status, barriers and end of
// input arrive in order
// and intact over a Flight stream.
func TestShuffleStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srv, err := NewServer("127.0.0.1:0", "secret")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := EdgeKey{Job: "7", Attempt: 2, Exchange: 0, From: 1, To: 0}
	in := make(chan engine.Message, 4)
	srv.Accept(ctx, key, in)

	cl, err := Dial(srv.Addr(), "secret")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := make(chan engine.Message, 4)
	var sent []engine.Message
	b1 := testBatch(mem, 0, 10)
	b1.Sel = []int32{1, 3, 4, 9}
	b1.RowWatermark = []int64{0, 10, 0, 30, 40, 0, 0, 0, 0, 90}
	b1.Kinds = []vector.RowKind{0, vector.Delete, 0, vector.UpdateAfter, 0, 0, 0, 0, 0, 0}
	sent = append(sent,
		engine.Message{Kind: engine.KindWatermark, Watermark: -5},
		engine.Message{Kind: engine.KindData, Batch: b1},
		engine.Message{Kind: engine.KindIdle},
		engine.Message{Kind: engine.KindBarrier, Checkpoint: 3},
		engine.Message{Kind: engine.KindActive},
		engine.Message{Kind: engine.KindData, Batch: testBatch(mem, 100, 3)},
		engine.Message{Kind: engine.KindWatermark, Watermark: 1 << 40},
		engine.Message{Kind: engine.KindEnd})
	errc := make(chan error, 1)
	go func() { errc <- Send(ctx, cl, key, out, mem) }()
	go func() {
		for _, m := range sent {
			out <- m
		}
	}()
	var got []string
	for {
		m := <-in
		switch m.Kind {
		case engine.KindData:
			b := m.Batch
			s := fmt.Sprintf("data %d rows:", b.Len())
			for i := range b.Len() {
				s += fmt.Sprintf(" %s/%s", b.Column(0).ValueStr(i), b.Column(1).ValueStr(i))
				if b.RowWatermark != nil {
					s += fmt.Sprintf("@%d", b.RowWatermark[i])
				}
				if b.Kinds != nil {
					s += b.Kinds[i].String()
				}
			}
			got = append(got, s)
			b.Release()
		case engine.KindWatermark:
			got = append(got, fmt.Sprintf("watermark %d", m.Watermark))
		case engine.KindBarrier:
			got = append(got, fmt.Sprintf("barrier %d", m.Checkpoint))
		case engine.KindEnd:
			got = append(got, "end")
		case engine.KindIdle, engine.KindActive:
			got = append(got, m.Kind.String())
		}
		if m.Kind == engine.KindEnd {
			break
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	want := []string{
		"watermark -5",
		"data 4 rows: key-1/1@10-D key-3/3@30+U key-4/4@40+I key-9/9@90+I",
		"idle",
		"barrier 3",
		"active",
		"data 3 rows: key-100/(null) key-101/101 key-102/102",
		"watermark 1099511627776",
		"end",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	mem.AssertSize(t, 0)
}

// TestShuffleAuth: a call without the token is refused.
func TestShuffleAuth(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", "secret")
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("ping", func(context.Context, []byte) ([]byte, error) { return []byte("pong"), nil })
	go srv.Serve()
	defer srv.Shutdown()
	for _, tc := range []struct{ token, want string }{{"", "bearer token"}, {"wrong", "bearer token"}, {"secret", ""}} {
		cl, err := Dial(srv.Addr(), tc.token)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Call(context.Background(), cl, "ping", nil)
		cl.Close()
		if tc.want == "" {
			if err != nil || string(out) != "pong" {
				t.Fatalf("token %q: %q %v", tc.token, out, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("token %q: err %v, want %q", tc.token, err, tc.want)
		}
	}
}

// sensorBatch is a batch shaped like the sensors pipeline's rows before
// the exchange: a string key, an int64 and a float64 per row.
func sensorBatch(mem memory.Allocator, n int) *vector.Batch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "sensor_id", Type: arrow.BinaryTypes.String}, {Name: "ts", Type: arrow.PrimitiveTypes.Int64}, {Name: "temp_c", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("sensor-%04d", i%1000))
		b.Field(1).(*array.Int64Builder).Append(int64(i) * 10)
		b.Field(2).(*array.Float64Builder).Append(float64(i%400) / 10)
	}
	out := vector.New(b.NewRecordBatch())
	out.RowWatermark = make([]int64, n)
	return out
}

// BenchmarkShuffle compares one exchange edge in-process (a channel) with
// the same edge over an Arrow Flight stream on loopback: rows/s, half of
// each 8192-row batch selected (as a keyed exchange to two subtasks does).
func BenchmarkShuffle(b *testing.B) {
	mem := memory.NewGoAllocator()
	const rows = 8192
	proto := sensorBatch(mem, rows)
	sel := make([]int32, 0, rows/2)
	for i := 0; i < rows; i += 2 {
		sel = append(sel, int32(i))
	}
	next := func() *vector.Batch {
		proto.Rec.Retain()
		out := vector.New(proto.Rec)
		out.Sel, out.RowWatermark = sel, proto.RowWatermark
		return out
	}
	b.Run("in-process", func(b *testing.B) {
		c := make(chan engine.Message, 4)
		done := make(chan struct{})
		go func() {
			for m := range c {
				m.Batch.Release()
			}
			close(done)
		}()
		for b.Loop() {
			c <- engine.Message{Kind: engine.KindData, Batch: next()}
		}
		close(c)
		<-done
		b.ReportMetric(float64(b.N*rows/2)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("flight", func(b *testing.B) {
		srv, err := NewServer("127.0.0.1:0", "")
		if err != nil {
			b.Fatal(err)
		}
		go srv.Serve()
		defer srv.Shutdown()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		key := EdgeKey{Job: "b", Attempt: 1}
		in := make(chan engine.Message, 4)
		srv.Accept(ctx, key, in)
		cl, err := Dial(srv.Addr(), "")
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		out := make(chan engine.Message, 4)
		errc := make(chan error, 1)
		go func() { errc <- Send(ctx, cl, key, out, mem) }()
		done := make(chan struct{})
		go func() {
			for m := range in {
				if m.Batch != nil {
					m.Batch.Release()
				}
				if m.Kind == engine.KindEnd {
					break
				}
			}
			close(done)
		}()
		for b.Loop() {
			out <- engine.Message{Kind: engine.KindData, Batch: next()}
		}
		out <- engine.Message{Kind: engine.KindEnd}
		<-done
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N*rows/2)/b.Elapsed().Seconds(), "rows/s")
	})
}
