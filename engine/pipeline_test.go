package engine

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/vector"
)

type sliceSource struct {
	mem  memory.Allocator
	vals [][]int64
	wms  []int64
	err  error
}

func (s *sliceSource) Run(ctx context.Context, emit func(Message) error) error {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i, v := range s.vals {
		b := array.NewInt64Builder(s.mem)
		b.AppendValues(v, nil)
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(v)))
		col.Release()
		if err := emit(Message{Kind: KindData, Batch: vector.New(rec)}); err != nil {
			return err
		}
		if err := emit(Message{Kind: KindWatermark, Watermark: s.wms[i]}); err != nil {
			return err
		}
	}
	return s.err
}

// recorder is an operator that records what reaches it.
type recorder struct {
	rows int
	wms  []int64
	fin  bool
}

func (r *recorder) Process(b *vector.Batch, out Output) error {
	r.rows += b.Len()
	return out.Emit(b)
}

func (r *recorder) OnWatermark(wm int64, out Output) error {
	r.wms = append(r.wms, wm)
	return out.EmitWatermark(wm)
}

func (r *recorder) Finish(out Output) error { r.fin = true; return nil }

type countSink struct {
	rows           int64
	flushed, closd bool
}

func (s *countSink) Write(b *vector.Batch) error { s.rows += int64(b.Len()); b.Release(); return nil }
func (s *countSink) Flush() error                { s.flushed = true; return nil }
func (s *countSink) Close() error                { s.closd = true; return nil }

func TestPipelineOrderAndFinalWatermark(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := &recorder{}
	sink := &countSink{}
	p := &Pipeline{
		Source: &sliceSource{mem: mem, vals: [][]int64{{1, 2}, {3}}, wms: []int64{5, 5}},
		Ops:    []Operator{rec},
		Sink:   sink,
	}
	st, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.rows != 3 || sink.rows != 3 || !sink.flushed || !sink.closd || !rec.fin {
		t.Fatalf("rows %d/%d flushed %v closed %v finished %v", rec.rows, sink.rows, sink.flushed, sink.closd, rec.fin)
	}
	// Duplicate watermarks are suppressed; bounded input ends with +inf.
	if len(rec.wms) != 2 || rec.wms[0] != 5 || rec.wms[1] != MaxWatermark {
		t.Fatalf("watermarks %v", rec.wms)
	}
	if st.Interrupted || st.Ops[1].RowsIn != 3 || st.Ops[0].RowsOut != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPipelineSourceError(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	boom := errors.New("boom")
	rec := &recorder{}
	p := &Pipeline{Source: &sliceSource{mem: mem, vals: [][]int64{{1}}, wms: []int64{1}, err: boom}, Ops: []Operator{rec}, Sink: &countSink{}}
	if _, err := p.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if rec.fin {
		t.Fatal("a failed job must not finish its operators")
	}
}

type failOp struct{}

func (failOp) Process(b *vector.Batch, out Output) error { b.Release(); return errors.New("op failed") }

func TestPipelineOperatorErrorStopsSource(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals := make([][]int64, 100)
	wms := make([]int64, 100)
	for i := range vals {
		vals[i] = []int64{int64(i)}
		wms[i] = int64(i)
	}
	p := &Pipeline{Source: &sliceSource{mem: mem, vals: vals, wms: wms}, Ops: []Operator{failOp{}}, Sink: &countSink{}, ChannelDepth: 1}
	if _, err := p.Run(context.Background()); err == nil || err.Error() != "op failed" {
		t.Fatalf("got %v", err)
	}
}

// TestPipelineSharedSource: one source read by both inputs of a union runs
// once; each input receives every batch and watermark, and every batch
// reference is released.
func TestPipelineSharedSource(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := &countingSource{sliceSource: sliceSource{mem: mem, vals: [][]int64{{1, 2}, {3}, {4, 5, 6}}, wms: []int64{2, 3, 6}}}
	left, right := &recorder{}, &recorder{}
	sink := &countSink{}
	p := &Pipeline{Root: &Node{Binary: op.Union{}, Inputs: []*Node{
		{Source: src, Ops: []Operator{left}},
		{Source: src, Ops: []Operator{right}},
	}}, Sink: sink}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if src.runs.Load() != 1 {
		t.Fatalf("the shared source ran %d times", src.runs.Load())
	}
	if left.rows != 6 || right.rows != 6 || sink.rows != 12 {
		t.Fatalf("rows: left %d, right %d, sink %d", left.rows, right.rows, sink.rows)
	}
	for _, r := range []*recorder{left, right} {
		if !slices.Equal(r.wms, []int64{2, 3, 6, MaxWatermark}) || !r.fin {
			t.Fatalf("watermarks %v, finished %v", r.wms, r.fin)
		}
	}
}

type countingSource struct {
	sliceSource
	runs atomic.Int32
}

func (s *countingSource) Run(ctx context.Context, emit func(Message) error) error {
	s.runs.Add(1)
	return s.sliceSource.Run(ctx, emit)
}
