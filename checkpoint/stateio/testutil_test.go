package stateio

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
)

// Slots of the test checkpoints: a windowed aggregate with typed values
// and a source with raw offsets and a watermark.
var (
	aggSlots = []checkpoint.Slot{
		{Name: "window_agg", Values: []arrow.Field{
			{Name: "sum_amount", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}},
			{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
			{Name: "last_seen", Type: arrow.FixedWidthTypes.Timestamp_ms},
			{Name: "avg_temp", Type: arrow.PrimitiveTypes.Float64},
		}},
		{Name: "tags", Values: []arrow.Field{
			{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		}},
	}
	sourceSlots = []checkpoint.Slot{
		{Name: "source_offsets", Raw: true, Values: []arrow.Field{
			{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
			{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
		}},
		{Name: "watermark", Raw: true, Values: []arrow.Field{
			{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
		}},
	}
)

// aggRow is one window_agg row of a test checkpoint.
type aggRow struct {
	kg         int32
	key        string
	start, end int64
	sum        int64 // hundredths
	cnt        int64
	seen       int64 // epoch ms
}

// state is what a test checkpoint holds.
type state struct {
	agg     [2][]aggRow // per subtask
	offsets []int64     // offset per partition
	wm      int64
}

func baseState() state {
	return state{
		agg: [2][]aggRow{
			{{3, `["sensor-01"]`, 0, 60000, 21540, 10, 1772352000123}, {3, `["sensor-01"]`, 60000, 120000, 100, 1, 1772352060000}},
			{{100, `["sensor-02"]`, 0, 60000, -705, 3, 1772352001000}},
		},
		offsets: []int64{1284, 977},
		wm:      1772352057000,
	}
}

// writeCheckpoint writes st as checkpoint id into dir.
func writeCheckpoint(t testing.TB, dir string, id uint64, st state) *checkpoint.Checkpoint {
	t.Helper()
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	for sub, rows := range st.agg {
		p, err := w.Part("window_agg", sub, aggSlots)
		if err != nil {
			t.Fatal(err)
		}
		b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
		for _, r := range rows {
			b.Windowed("window_agg", r.kg, r.key, r.start, r.end)
			b.Value("sum_amount").(*array.Decimal128Builder).Append(decimal128.FromI64(r.sum))
			b.Value("cnt").(*array.Int64Builder).Append(r.cnt)
			b.Value("last_seen").(*array.TimestampBuilder).Append(arrow.Timestamp(r.seen))
		}
		if sub == 0 {
			b.Keyed("tags", 5, `["eu",3]`)
			lb := b.Value("tags").(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append("a<b")
		}
		writeRecord(t, p, b)
	}
	p, err := w.Part("source", 0, sourceSlots)
	if err != nil {
		t.Fatal(err)
	}
	b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
	for part, off := range st.offsets {
		b.Raw("source_offsets")
		b.Value("partition").(*array.Int32Builder).Append(int32(part))
		b.Value("offset").(*array.Int64Builder).Append(off)
	}
	b.Raw("watermark")
	b.Value("watermark").(*array.Int64Builder).Append(st.wm)
	writeRecord(t, p, b)
	if err := w.Commit(checkpoint.Meta{Job: "sensors", Fingerprint: "plan-sha256:test", Properties: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeRecord(t testing.TB, p *checkpoint.PartWriter, b *checkpoint.RowBuilder) {
	t.Helper()
	defer b.Release()
	rec, err := b.NewRecord()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
