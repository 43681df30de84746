package kafka

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"

	cjson "github.com/clink-dev/clink/connectors/formats/json"
)

// An outBatch's records are the live rows as JSON lines, keyed by
// key_column (none for NULL); once every record is acknowledged it is
// reused, and the next batch's records carry nothing of the last one's.
func TestOutBatchRecords(t *testing.T) {
	acks := 0
	ack := func(*kgo.Record, error) { acks++ }
	for _, c := range []struct {
		n      int
		sel    bool
		keyCol int
	}{{10, false, 0}, {1, false, 0}, {100, true, 0}, {30, false, -1}, {50, true, 0}, {0, false, 0}} {
		b := sensorBatch(c.n, c.sel)
		lines := bytes.SplitAfter(cjson.AppendBatch(nil, b), []byte("\n"))
		o, err := newOutBatch(b, "out", &sinkFormat{value: jsonEncoder{}, keyCol: c.keyCol}, ack)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.recs) != b.Len() {
			t.Fatalf("%d records for %d rows", len(o.recs), b.Len())
		}
		k := 0
		each(b, func(i int) {
			r := &o.recs[k]
			if r.Topic != "out" || string(r.Value)+"\n" != string(lines[k]) {
				t.Errorf("record %d: topic %s value %s, want %s", k, r.Topic, r.Value, lines[k])
			}
			switch col := b.Rec.Column(0).(*array.String); {
			case c.keyCol < 0 || col.IsNull(i):
				if r.Key != nil {
					t.Errorf("record %d: key %q, want none", k, r.Key)
				}
			case string(r.Key) != col.Value(i):
				t.Errorf("record %d: key %q, want %q", k, r.Key, col.Value(i))
			}
			if r.Partition != 0 || r.Offset != 0 || !r.Timestamp.IsZero() {
				t.Errorf("record %d carries an earlier record's fields: %+v", k, r)
			}
			k++
		})
		for k := range o.recs {
			// What the producer does to a record before its promise.
			o.recs[k].Partition, o.recs[k].Offset, o.recs[k].Timestamp = 3, 99, time.Now()
		}
		before := acks
		var p fakeProducer
		if n := o.produce(&p); n != b.Len() {
			t.Fatalf("produce: %d records for %d rows", n, b.Len())
		}
		p.ackAll(nil)
		if acks-before != b.Len() {
			t.Fatalf("%d acknowledgements for %d rows", acks-before, b.Len())
		}
		b.Release()
	}
}

// fakeProducer keeps the records and their promises until ackAll.
type fakeProducer struct {
	recs     []*kgo.Record
	promises []func(*kgo.Record, error)
}

func (p *fakeProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	p.recs = append(p.recs, r)
	p.promises = append(p.promises, promise)
}

func (p *fakeProducer) ackAll(err error) {
	for k, r := range p.recs {
		p.promises[k](r, err)
	}
	p.recs, p.promises = p.recs[:0], p.promises[:0]
}

// Writing a batch allocates nothing per row, and, once the pool is warm,
// only the JSON encoder's two setup allocations per batch.
func TestOutBatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	b := sensorBatch(1000, true)
	defer b.Release()
	p := &fakeProducer{}
	ack := func(*kgo.Record, error) {}
	sf := &sinkFormat{value: jsonEncoder{}, keyCol: 0}
	allocs := testing.AllocsPerRun(100, func() {
		o, _ := newOutBatch(b, "out", sf, ack)
		o.produce(p)
		p.ackAll(nil)
	})
	if allocs > 3 {
		t.Errorf("%v allocations per batch of %d rows", allocs, b.Len())
	}
}
