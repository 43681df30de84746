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
// changelog kinds), watermarks, barriers and end of input arrive in order
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
		engine.Message{Kind: engine.KindBarrier, Checkpoint: 3},
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
		"barrier 3",
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
