package kafka

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors/formats/registry"
)

// The tools behind `clink kafka produce|consume`: enough of a Kafka client
// that the tutorial and the tests need no other.

// ProduceConfig says where lines go.
type ProduceConfig struct {
	Topic string
	// Partition, when >= 0, sends every record there; otherwise records
	// are partitioned by key (murmur2, as Kafka's Java client) or, without
	// a key, spread in sticky batches.
	Partition int32
	// KeyField names a top-level field of each JSON line whose value
	// (strings without quotes, other values as written) is the key.
	KeyField string

	// ValueFormat, when set (FormatAvroConfluent or
	// FormatProtobufConfluent), encodes each line, a JSON object, with
	// Schema, registered (or found) first under Subject through Registry,
	// whose compatibility check may refuse it; records carry the Schema
	// Registry header (and, for Protobuf, the message indexes). Empty
	// sends lines as they are.
	ValueFormat string
	Registry    *registry.Client
	// Subject defaults to Topic + "-value" (Confluent's
	// TopicNameStrategy).
	Subject string
	// Schema is the Avro schema (JSON) or the .proto file's text;
	// SchemaName the .proto file's name, for errors.
	Schema, SchemaName string
	// Message is the Protobuf message of each line: its full name, or its
	// name within the file's package ("Outer.Inner" when nested).
	Message string
}

// Produce sends one record per non-blank line of in (acks=all, idempotent)
// and returns how many were acknowledged.
//
// With a ValueFormat, a line that does not encode ends Produce with an
// error naming it (stdin:N) and the field; the lines before it are sent.
func Produce(ctx context.Context, cc *ClientConfig, pc ProduceConfig, in io.Reader) (int64, error) {
	var enc toolEncoder
	if pc.ValueFormat != "" {
		var err error
		if enc, err = newToolEncoder(ctx, pc); err != nil {
			return 0, err
		}
	}
	opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(pc.Topic), kgo.RecordDeliveryTimeout(deliveryTimeout)}
	if pc.Partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := cc.newClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	n, err := cc.partitions(ctx, cl, pc.Topic)
	if err != nil {
		return 0, err
	}
	if pc.Partition >= n {
		return 0, fmt.Errorf("topic %s has %d partitions; there is no partition %d", pc.Topic, n, pc.Partition)
	}

	var acked atomic.Int64
	var mu sync.Mutex
	var firstErr error
	promise := func(r *kgo.Record, err error) {
		if err == nil {
			acked.Add(1)
			return
		}
		mu.Lock()
		if firstErr == nil {
			firstErr = fmt.Errorf("topic %s partition %d: %w", r.Topic, r.Partition, err)
		}
		mu.Unlock()
	}
	// Lines are copied into shared chunks and records come from shared
	// slices: the producer holds them until acknowledged.
	var chunk []byte
	var recs []kgo.Record
	br := bufio.NewReaderSize(in, 1<<20)
	var long, scratch []byte
	lineNo := 0
	var lineErr error
	for {
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if rerr != nil && rerr != io.EOF {
			return acked.Load(), rerr
		}
		if len(line) > 0 {
			lineNo++
		}
		line = trimEOL(line)
		// With a format the line is encoded, and the key copied out of br's
		// buffer; without, the value is the line and the key a part of it.
		if !isBlank(line) && enc != nil {
			var err error
			if scratch, err = enc.append(scratch[:0], line); err != nil {
				lineErr = fmt.Errorf("stdin:%d: %v", lineNo, err)
				break
			}
			var key []byte
			keyed := false
			if pc.KeyField != "" {
				if key, keyed, err = fieldText(line, pc.KeyField); err != nil {
					lineErr = fmt.Errorf("stdin:%d: %v", lineNo, err)
					break
				}
			}
			if cap(chunk)-len(chunk) < len(scratch)+len(key) {
				chunk = make([]byte, 0, max(1<<20, len(scratch)+len(key)))
			}
			start := len(chunk)
			chunk = append(chunk, scratch...)
			if len(recs) == cap(recs) {
				recs = make([]kgo.Record, 0, 4096)
			}
			recs = append(recs, kgo.Record{Value: chunk[start:len(chunk):len(chunk)], Partition: pc.Partition})
			r := &recs[len(recs)-1]
			if keyed {
				start = len(chunk)
				chunk = append(chunk, key...)
				r.Key = chunk[start:len(chunk):len(chunk)]
			}
			cl.Produce(ctx, r, promise)
		} else if !isBlank(line) {
			if cap(chunk)-len(chunk) < len(line) {
				chunk = make([]byte, 0, max(1<<20, len(line)))
			}
			start := len(chunk)
			chunk = append(chunk, line...)
			if len(recs) == cap(recs) {
				recs = make([]kgo.Record, 0, 4096)
			}
			recs = append(recs, kgo.Record{Value: chunk[start:len(chunk):len(chunk)], Partition: pc.Partition})
			r := &recs[len(recs)-1]
			if pc.KeyField != "" {
				key, ok, err := fieldText(r.Value, pc.KeyField)
				if err != nil {
					return acked.Load(), fmt.Errorf("line %d: %v", lineNo, err)
				}
				if ok {
					r.Key = key
				}
			}
			cl.Produce(ctx, r, promise)
		}
		if rerr == io.EOF {
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return acked.Load(), err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr == nil {
		firstErr = lineErr
	}
	return acked.Load(), firstErr
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// fieldText finds a top-level field of a JSON object and returns its value
// as key text: a string's contents, or any other value as written. A
// missing field or null gives ok = false. Lines with escapes in keys or in
// the value take encoding/json's path.
func fieldText(line []byte, name string) (_ []byte, ok bool, _ error) {
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return slowField(line, name)
	}
	i = skipWS(line, i+1)
	for i < len(line) && line[i] == '"' {
		end, esc := scanString(line, i)
		if end < 0 || esc {
			return slowField(line, name)
		}
		key := line[i+1 : end]
		i = skipWS(line, end+1)
		if i >= len(line) || line[i] != ':' {
			return slowField(line, name)
		}
		i = skipWS(line, i+1)
		vend := skipValue(line, i)
		if vend < 0 {
			return slowField(line, name)
		}
		if string(key) == name {
			v := line[i:vend]
			switch {
			case string(v) == "null":
				return nil, false, nil
			case len(v) > 0 && v[0] == '"':
				if _, esc := scanString(line, i); esc {
					return slowField(line, name)
				}
				return v[1 : len(v)-1], true, nil
			}
			return v, true, nil
		}
		i = skipWS(line, vend)
		if i < len(line) && line[i] == ',' {
			i = skipWS(line, i+1)
			continue
		}
		break
	}
	if i < len(line) && line[i] == '}' {
		return nil, false, nil
	}
	return slowField(line, name)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scanString returns the index of the closing quote of the string opening
// at b[i], and whether it holds escapes; -1 if it does not close.
func scanString(b []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j, esc
		}
	}
	return -1, esc
}

// skipValue returns the end of the JSON value at b[i] (not validated
// beyond nesting and strings); -1 if it does not end.
func skipValue(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			end, _ := scanString(b, j)
			if end < 0 {
				return -1
			}
			j = end
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return j
			}
		}
	}
	if depth == 0 {
		return len(b)
	}
	return -1
}

func slowField(line []byte, name string) ([]byte, bool, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, false, fmt.Errorf("not a JSON object: %v", err)
	}
	raw, found := obj[name]
	if !found || string(raw) == "null" {
		return nil, false, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, err
		}
		return []byte(s), true, nil
	}
	return raw, true, nil
}

// ConsumeConfig says what to read and when to stop.
type ConsumeConfig struct {
	Topic string
	// ReadUncommitted reads every record, those of open and aborted
	// transactions too (Kafka's isolation.level=read_uncommitted).
	// Otherwise (the default) only committed ones are read, as a
	// consumer of an exactly-once topic must, and ToEnd stops at each
	// partition's last stable offset.
	ReadUncommitted bool
	// FromBeginning starts every partition at its first offset; otherwise
	// at its end (only records produced from now on).
	FromBeginning bool
	// ToEnd stops once every partition reached the end offset it had when
	// consuming started.
	ToEnd bool
	// Max stops after this many records (0: no limit).
	Max int64
	// Idle stops when no record arrived for this long (0: never).
	Idle time.Duration
	// CountOnly writes nothing per record (a bare consume loop).
	CountOnly bool
	// Pools recycles records and decompression buffers as the source
	// does (for a like-for-like benchmark baseline).
	Pools bool

	// ValueFormat, when set (one of ConsumeFormats), decodes each value
	// to one JSON line; avro-confluent and protobuf-confluent fetch the
	// writer schemas from Registry. Empty writes values as they are.
	ValueFormat string
	// KeyFormat, when set, writes {"key":K,"value":V} lines instead, K
	// decoded as it says (null for a record without a key); it needs a
	// ValueFormat.
	KeyFormat string
	Registry  *registry.Client
	// OnError, when set, is given the error of each record that does not
	// decode (naming its topic, partition and offset), and the record is
	// skipped; otherwise the first such record ends Consume with that
	// error, after the records before it were written.
	OnError func(error)
}

// Consume writes record values, one per line, to out (unless CountOnly)
// and returns how many records it read. Partitions are read directly, with
// no group. It stops at ctx's end (returning the count and no error), or as
// cfg says.
func Consume(ctx context.Context, cc *ClientConfig, cfg ConsumeConfig, out io.Writer) (int64, error) {
	format, err := newToolFormat(cfg)
	if err != nil {
		return 0, err
	}
	if format != nil {
		defer format.release()
	}
	admin, err := cc.newClient()
	if err != nil {
		return 0, err
	}
	n, err := cc.partitions(ctx, admin, cfg.Topic)
	if err != nil {
		admin.Close()
		return 0, err
	}
	starts, ends, err := listOffsets(ctx, cc, admin, cfg.Topic, cfg.FromBeginning, cfg.ToEnd, !cfg.ReadUncommitted)
	admin.Close()
	if err != nil {
		return 0, err
	}
	parts := map[int32]kgo.Offset{}
	remain := 0
	for p := int32(0); p < n; p++ {
		if cfg.ToEnd && starts[p] >= ends[p] {
			continue
		}
		parts[p] = kgo.NewOffset().At(starts[p])
		remain++
	}
	if cfg.ToEnd && remain == 0 {
		return 0, nil
	}
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: parts}), kgo.KeepControlRecords()}
	if !cfg.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if cfg.Pools {
		opts = append(opts, kgo.WithPools(&recordPool{}))
	}
	cl, err := cc.newClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	w := bufio.NewWriterSize(out, 1<<16)
	defer w.Flush()
	var count int64
	last := time.Now()
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if cfg.Idle > 0 {
			pctx, cancel = context.WithDeadline(ctx, last.Add(cfg.Idle))
		}
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return count, nil
		}
		got := false
		for _, f := range fetches {
			for _, t := range f.Topics {
				for _, p := range t.Partitions {
					if p.Err != nil {
						if errors.Is(p.Err, context.DeadlineExceeded) {
							continue
						}
						return count, fmt.Errorf("topic %s partition %d: %w", t.Topic, p.Partition, p.Err)
					}
					for _, r := range p.Records {
						if cfg.ToEnd && r.Offset >= ends[p.Partition] {
							break
						}
						if cfg.ToEnd && r.Offset+1 >= ends[p.Partition] {
							remain--
						}
						if r.Attrs.IsControl() {
							continue
						}
						got = true
						count++
						switch {
						case format != nil:
							if err := format.add(ctx, r); err != nil {
								err = fmt.Errorf("topic %s partition %d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
								if cfg.OnError == nil {
									w.Write(format.flush())
									return count, err
								}
								cfg.OnError(err)
							}
						case !cfg.CountOnly:
							w.Write(r.Value)
							w.WriteByte('\n')
						}
						if cfg.Max > 0 && count >= cfg.Max {
							if format != nil {
								w.Write(format.flush())
							}
							return count, nil
						}
					}
					if format != nil {
						w.Write(format.flush())
					}
					if cfg.Pools {
						for _, r := range p.Records {
							r.Recycle()
						}
					}
				}
			}
		}
		if cfg.ToEnd && remain == 0 {
			return count, nil
		}
		if got {
			last = time.Now()
			if !cfg.CountOnly {
				w.Flush()
			}
		} else if cfg.Idle > 0 && time.Since(last) >= cfg.Idle {
			return count, nil
		}
	}
}

// listOffsets lists every partition's start offset (first or end) and, if
// asked, its end offset: the last stable offset if committed, else the
// high watermark.
func listOffsets(ctx context.Context, cc *ClientConfig, cl *kgo.Client, topic string, first, withEnds, committed bool) (starts, ends map[int32]int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, cc.timeout())
	defer cancel()
	adm := kadm.NewClient(cl)
	conv := func(l kadm.ListedOffsets, err error) (map[int32]int64, error) {
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("topic %s: listing offsets: %w", topic, err)
		}
		m := map[int32]int64{}
		for p, o := range l[topic] {
			m[p] = o.Offset
		}
		return m, nil
	}
	if first {
		starts, err = conv(adm.ListStartOffsets(ctx, topic))
	} else {
		starts, err = conv(adm.ListEndOffsets(ctx, topic))
	}
	if err != nil || !withEnds {
		return starts, nil, err
	}
	if committed {
		ends, err = conv(adm.ListCommittedOffsets(ctx, topic))
	} else {
		ends, err = conv(adm.ListEndOffsets(ctx, topic))
	}
	return starts, ends, err
}
