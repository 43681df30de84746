package kafka

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// deliveryTimeout bounds how long a record may wait for its acknowledgement
// (Kafka's delivery.timeout.ms default), so Flush cannot hang on a lost
// cluster.
const deliveryTimeout = 2 * time.Minute

// NewSink checks the options, reaches the brokers and checks that the topic
// exists, so a wrong address or name fails before the job starts.
//
// Guarantee: at-least-once by default ('delivery_guarantee' =
// 'at_least_once' or 'none'). Records go out with acks=all through the
// idempotent producer (no duplicates from retries); Flush waits for every
// acknowledgement. A restarted job may write rows again. With
// 'exactly_once' the sink is a TxSink: one Kafka transaction per
// checkpoint.
func (Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	var s engine.Sink
	var err error
	if t.Options["delivery_guarantee"] == "exactly_once" {
		s, err = newTxSink(t)
	} else {
		s, err = newSink(t)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka sink '%s': %w", t.Name, err)
	}
	return s, nil
}

// keyColumn is the index of key_column in the table, -1 without one.
func keyColumn(t *connectors.Table) (int, error) {
	k := t.Options["key_column"]
	if k == "" {
		return -1, nil
	}
	col := -1
	for i, f := range t.Schema.Fields() {
		if f.Name == k || (col < 0 && strings.EqualFold(f.Name, k)) {
			col = i
		}
	}
	if col < 0 {
		return -1, &connectors.OptionError{Key: "key_column", Msg: fmt.Sprintf("key_column '%s' is not a column of %s", k, t.Name)}
	}
	return col, nil
}

var _ connectors.SinkValidator = Connector{}

// ValidateSink makes NewSink's checks that read no file (TLS certificates),
// resolve no secret and reach no broker.
func (Connector) ValidateSink(t *connectors.Table) error {
	if err := checkSink(t); err != nil {
		return fmt.Errorf("kafka sink '%s': %w", t.Name, err)
	}
	return nil
}

// checkSink is the sinks' checks without I/O: the client options, the
// transaction options against the guarantee, key_column.
func checkSink(t *connectors.Table) error {
	if err := checkClient(t.Options); err != nil {
		return err
	}
	if t.Options["delivery_guarantee"] == "exactly_once" {
		if timeout := t.Options.Int("transaction_timeout_ms"); timeout <= 0 || timeout > 1<<31-1 {
			return &connectors.OptionError{Key: "transaction_timeout_ms", Msg: fmt.Sprintf("option 'transaction_timeout_ms' must be positive and fit in 32 bits (it is %d)", timeout)}
		}
	} else {
		for _, k := range []string{"transactional_id_prefix", "transaction_timeout_ms"} {
			if t.Options[k] != "" && t.Options[k] != optionDefault(k) {
				return &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s' needs delivery_guarantee 'exactly_once'", k)}
			}
		}
	}
	if _, err := keyColumn(t); err != nil {
		return err
	}
	return checkSinkFormat(t)
}

func newSink(t *connectors.Table) (*Sink, error) {
	if err := checkSink(t); err != nil {
		return nil, err
	}
	cc, err := clientConfig(t.Options)
	if err != nil {
		return nil, err
	}
	s := &Sink{name: t.Name, topic: t.Options["topic"]}
	if s.format, err = newSinkFormat(t, cc.timeout()); err != nil {
		return nil, err
	}
	s.reach = newReach(fmt.Sprintf("kafka sink '%s' (topic %s)", t.Name, s.topic), strings.Join(cc.Brokers, ","), t.Runtime.Stderr)
	s.cl, err = cc.newClient(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		kgo.DefaultProduceTopic(s.topic),
		s.reach.opt(),
	)
	if err != nil {
		s.reach.close()
		return nil, err
	}
	if _, err := cc.partitions(context.Background(), s.cl, s.topic); err != nil {
		s.cl.Close()
		s.reach.close()
		return nil, err
	}
	s.promise = s.acked
	return s, nil
}

// Sink produces one record per row: the row as a JSON object is the value,
// key_column's value the key.
type Sink struct {
	reach   *reach
	name    string
	topic   string
	cl      *kgo.Client
	format  *sinkFormat
	promise func(*kgo.Record, error)
	written atomic.Int64

	mu  sync.Mutex
	err error
}

var (
	_ engine.Sink          = (*Sink)(nil)
	_ engine.StatsReporter = (*Sink)(nil)
)

// Stats reports rows acknowledged by the brokers.
func (s *Sink) Stats() map[string]int64 { return map[string]int64{"rows_written": s.written.Load()} }

func (s *Sink) acked(r *kgo.Record, err error) {
	if err == nil {
		s.written.Add(1)
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = fmt.Errorf("kafka sink '%s': topic %s partition %d: %w", s.name, r.Topic, r.Partition, err)
	}
	s.mu.Unlock()
}

func (s *Sink) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Write hands the batch's live rows to the producer. Their records and
// bytes come from a pooled outBatch, which the producer owns until every
// record is acknowledged. Errors of earlier writes surface here or in
// Flush.
func (s *Sink) Write(b *vector.Batch) error {
	defer b.Release()
	if err := s.firstErr(); err != nil {
		return err
	}
	o, err := newOutBatch(b, s.topic, s.format, s.promise)
	if err != nil {
		return fmt.Errorf("kafka sink '%s': %w", s.name, err)
	}
	o.produce(s.cl)
	return nil
}

// outBatch is one written batch as records: they share one value buffer
// and one key buffer. The producer owns it from produce until the promise
// of its last record has run (franz-go calls each promise exactly once, also
// when a record fails or the client closes, and does not touch the record
// afterwards); that promise puts it back into outBatches. So a sink writing
// a steady stream of batches reuses a few sets of buffers instead of
// allocating a record slice and a value buffer per batch.
type outBatch struct {
	recs    []kgo.Record
	vals    []byte
	valEnds []int
	keys    []byte
	keyEnds []int

	left    atomic.Int64             // records not yet acknowledged
	ack     func(*kgo.Record, error) // the sink's promise
	promise func(*kgo.Record, error) // ack, then release after the last
}

var outBatches sync.Pool // *outBatch

// newOutBatch turns the live rows of b into records for topic, their
// values and keys written as f says. ack is called once per record, as a
// promise is.
func newOutBatch(b *vector.Batch, topic string, f *sinkFormat, ack func(*kgo.Record, error)) (*outBatch, error) {
	o, _ := outBatches.Get().(*outBatch)
	if o == nil {
		o = &outBatch{}
		o.promise = o.acked
	}
	o.ack = ack
	n := b.Len()
	if n == 0 {
		o.recs = o.recs[:0]
		return o, nil
	}
	var err error
	if o.vals, o.valEnds, err = f.value.appendRecords(o.vals[:0], b, o.valEnds[:0]); err != nil {
		o.recs = o.recs[:0]
		o.release()
		return nil, err
	}
	if cap(o.recs) < n {
		o.recs = make([]kgo.Record, n)
	}
	o.recs = o.recs[:n]
	keyed := f.keyCol >= 0 || f.key != nil
	var keys []byte
	switch {
	case f.keyCol >= 0:
		col := b.Rec.Column(f.keyCol)
		if cap(o.keyEnds) < n {
			o.keyEnds = make([]int, n)
		}
		o.keyEnds = o.keyEnds[:n]
		keys = o.keys[:0]
		if keys == nil {
			keys = make([]byte, 0, 16*n) // non-nil: an empty string is a key, NULL is none
		}
		k := 0
		each(b, func(i int) {
			if col.IsNull(i) {
				o.keyEnds[k] = -1
			} else {
				keys = appendKey(keys, col, i)
				o.keyEnds[k] = len(keys)
			}
			k++
		})
		o.keys = keys
	case f.key != nil:
		kb := f.keyOf.of(b)
		keys, o.keyEnds, err = f.key.appendRecords(o.keys[:0], kb, o.keyEnds[:0])
		kb.Release()
		o.keys = keys
		if err != nil {
			o.recs = o.recs[:0]
			o.release()
			return nil, fmt.Errorf("key: %w", err)
		}
	}
	vals, vsep, ksep := o.vals, f.value.sep(), 0
	if f.key != nil {
		ksep = f.key.sep()
	}
	start, kstart := 0, 0
	for k := range o.recs {
		end := o.valEnds[k]
		r := &o.recs[k]
		*r = kgo.Record{Topic: topic, Value: vals[start:end:end]}
		start = end + vsep
		if keyed && o.keyEnds[k] >= 0 {
			r.Key = keys[kstart:o.keyEnds[k]:o.keyEnds[k]]
			kstart = o.keyEnds[k] + ksep
		}
	}
	return o, nil
}

// producer is what outBatch needs of a *kgo.Client.
type producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// produce hands the records to cl; o belongs to the producer afterwards.
// It returns how many records it produced.
func (o *outBatch) produce(cl producer) int {
	n := len(o.recs)
	if n == 0 {
		o.release()
		return 0
	}
	o.left.Store(int64(n)) // before the first promise can run
	for k := range o.recs {
		cl.Produce(context.Background(), &o.recs[k], o.promise)
	}
	return n
}

func (o *outBatch) acked(r *kgo.Record, err error) {
	o.ack(r, err)
	if o.left.Add(-1) == 0 {
		o.release()
	}
}

func (o *outBatch) release() {
	clear(o.recs) // drop the records' references (topic, context, headers)
	o.ack = nil
	outBatches.Put(o)
}

// each calls fn for every live row of b, in order.
func each(b *vector.Batch, fn func(i int)) {
	if b.Sel != nil {
		for _, i := range b.Sel {
			fn(int(i))
		}
		return
	}
	for i, n := 0, b.NumRows(); i < n; i++ {
		fn(i)
	}
}

// appendKey writes a key value as text: strings as they are, numbers in
// decimal, anything else as Arrow prints it.
func appendKey(dst []byte, col arrow.Array, i int) []byte {
	switch c := col.(type) {
	case *array.String:
		return append(dst, c.Value(i)...)
	case *array.Int64:
		return strconv.AppendInt(dst, c.Value(i), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(c.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(c.Value(i)), 10)
	case *array.Int8:
		return strconv.AppendInt(dst, int64(c.Value(i)), 10)
	case *array.Float64:
		return strconv.AppendFloat(dst, c.Value(i), 'g', -1, 64)
	case *array.Float32:
		return strconv.AppendFloat(dst, float64(c.Value(i)), 'g', -1, 32)
	case *array.Boolean:
		return strconv.AppendBool(dst, c.Value(i))
	}
	return append(dst, col.ValueStr(i)...)
}

// Flush waits until every record written so far is acknowledged by all
// in-sync replicas.
func (s *Sink) Flush() error {
	if err := s.cl.Flush(context.Background()); err != nil {
		return fmt.Errorf("kafka sink '%s': %w", s.name, err)
	}
	return s.firstErr()
}

// Close releases the client; records not yet flushed may be lost.
func (s *Sink) Close() error {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	if s.reach != nil {
		s.reach.close()
	}
	return nil
}
