// Package flight carries a job's data between processes over Arrow
// Flight: the keyed shuffle between Workers (this file) and the endpoint
// that serves it and the cluster's control calls (server.go).
//
// A shuffle stream is one DoPut per exchange edge (upstream subtask i to
// downstream subtask j of one exchange of one job attempt). Rows travel as
// Arrow IPC record batches; watermarks, barriers and end of input travel
// in the same stream as FlightData messages with application metadata
// only, so their order with the rows is kept. Edges inside one process stay
// in-process channels.
package flight

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// The application metadata of a shuffle message: a kind byte, then
//
//	data:      a flags byte (flagRowWatermark, flagKinds)
//	watermark: the watermark, 8 bytes big-endian
//	barrier:   the checkpoint id, 8 bytes big-endian
//	idle:      nothing (watermark status)
//	active:    nothing (watermark status)
//	end:       nothing
//
// A data message's record carries two trailing columns besides the rows':
// the per-row watermark (int64) and the changelog kind (int8), meaningful
// when their flag is set.
const (
	metaData      = 'd'
	metaWatermark = 'w'
	metaBarrier   = 'b'
	metaEnd       = 'e'
	metaIdle      = 'i' // watermark status idle
	metaActive    = 'a' // watermark status active
	metaHello     = 'h' // first message: carries the descriptor

	flagRowWatermark = 1
	flagKinds        = 2

	colRowWatermark = "__clink_row_watermark"
	colKind         = "__clink_row_kind"
)

// EdgeKey names an exchange edge of one job attempt; it is the path of
// the stream's Flight descriptor.
type EdgeKey struct {
	Job      string
	Attempt  int
	Exchange int
	From, To int
}

func (k EdgeKey) path() []string {
	return []string{"shuffle", k.Job, fmt.Sprint(k.Attempt), fmt.Sprint(k.Exchange), fmt.Sprint(k.From), fmt.Sprint(k.To)}
}

func (k EdgeKey) String() string {
	return fmt.Sprintf("job %s attempt %d exchange %d edge %d->%d", k.Job, k.Attempt, k.Exchange, k.From, k.To)
}

func parseKey(path []string) (EdgeKey, error) {
	var k EdgeKey
	if len(path) != 6 || path[0] != "shuffle" {
		return k, fmt.Errorf("not a shuffle stream: descriptor %q", path)
	}
	k.Job = path[1]
	if _, err := fmt.Sscan(path[2]+" "+path[3]+" "+path[4]+" "+path[5], &k.Attempt, &k.Exchange, &k.From, &k.To); err != nil {
		return k, fmt.Errorf("shuffle descriptor %q: %v", path, err)
	}
	return k, nil
}

// Send streams what c carries to the Worker behind cl until end of input
// (or ctx ends): one DoPut, rows as record batches, the rest as metadata.
func Send(ctx context.Context, cl flight.Client, key EdgeKey, c <-chan engine.Message, mem memory.Allocator) error {
	stream, err := cl.DoPut(ctx)
	if err != nil {
		return fmt.Errorf("shuffle %s: %w", key, err)
	}
	hello := &flight.FlightData{
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: key.path()},
		AppMetadata:      []byte{metaHello},
	}
	if err := stream.Send(hello); err != nil {
		return fmt.Errorf("shuffle %s: %w", key, sendErr(stream, err))
	}
	var w *flight.Writer
	var schema *arrow.Schema
	var scratch trailing
	meta := make([]byte, 9)
	for {
		var m engine.Message
		select {
		case m = <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
		switch m.Kind {
		case engine.KindData:
			b := m.Batch.Compact(mem)
			if w == nil {
				schema = withTrailing(b.Schema())
				w = flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(mem))
			}
			rec, flags := scratch.encode(schema, b)
			err = w.WriteWithAppMetadata(rec, []byte{metaData, flags})
			rec.Release()
			b.Release()
		case engine.KindWatermark:
			meta[0] = metaWatermark
			binary.BigEndian.PutUint64(meta[1:], uint64(m.Watermark))
			err = stream.Send(&flight.FlightData{AppMetadata: append([]byte(nil), meta...)})
		case engine.KindBarrier:
			meta[0] = metaBarrier
			binary.BigEndian.PutUint64(meta[1:], m.Checkpoint)
			err = stream.Send(&flight.FlightData{AppMetadata: append([]byte(nil), meta...)})
		case engine.KindIdle:
			err = stream.Send(&flight.FlightData{AppMetadata: []byte{metaIdle}})
		case engine.KindActive:
			err = stream.Send(&flight.FlightData{AppMetadata: []byte{metaActive}})
		case engine.KindEnd:
			if err := stream.Send(&flight.FlightData{AppMetadata: []byte{metaEnd}}); err != nil {
				return fmt.Errorf("shuffle %s: %w", key, sendErr(stream, err))
			}
			if err := stream.CloseSend(); err != nil {
				return fmt.Errorf("shuffle %s: %w", key, err)
			}
			// The receiver answers once it has handed everything on.
			for {
				if _, err := stream.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return fmt.Errorf("shuffle %s: %w", key, err)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("shuffle %s: %w", key, sendErr(stream, err))
		}
	}
}

// sendErr replaces io.EOF from Send (the server ended the call) by the
// server's status.
func sendErr(stream flight.FlightService_DoPutClient, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	for {
		if _, rerr := stream.Recv(); rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return err
			}
			return rerr
		}
	}
}

func withTrailing(s *arrow.Schema) *arrow.Schema {
	fs := append(append([]arrow.Field{}, s.Fields()...),
		arrow.Field{Name: colRowWatermark, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colKind, Type: arrow.PrimitiveTypes.Int8})
	md := s.Metadata()
	return arrow.NewSchema(fs, &md)
}

// trailing holds a stream's scratch for the two trailing columns: zeros
// stand for absent per-row watermarks and kinds (never written, so shared
// by every batch), kinds are converted into buf. The IPC writer serializes
// a record before Write returns, so the scratch is free again after.
type trailing struct {
	zeros64 []int64
	zeros8  []int8
	kinds   []int8
}

// encode returns the record to send for b (compacted): its columns and
// the two trailing ones.
func (t *trailing) encode(schema *arrow.Schema, b *vector.Batch) (arrow.RecordBatch, byte) {
	n := b.NumRows()
	var flags byte
	wm := b.RowWatermark
	if wm != nil {
		flags |= flagRowWatermark
	} else {
		if len(t.zeros64) < n {
			t.zeros64 = make([]int64, n)
		}
		wm = t.zeros64
	}
	if len(t.zeros8) < n {
		t.zeros8 = make([]int8, n)
	}
	kinds := t.zeros8[:n]
	if b.Kinds != nil {
		flags |= flagKinds
		if cap(t.kinds) < n {
			t.kinds = make([]int8, n)
		}
		kinds = t.kinds[:n]
		for i, k := range b.Kinds[:n] {
			kinds[i] = int8(k)
		}
	}
	cols := make([]arrow.Array, 0, len(b.Rec.Columns())+2)
	cols = append(cols, b.Rec.Columns()...)
	wmData := array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(wm[:n]))}, nil, 0, 0)
	kData := array.NewData(arrow.PrimitiveTypes.Int8, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int8Traits.CastToBytes(kinds))}, nil, 0, 0)
	wmArr, kArr := array.NewInt64Data(wmData), array.NewInt8Data(kData)
	wmData.Release()
	kData.Release()
	cols = append(cols, wmArr, kArr)
	rec := array.NewRecordBatch(schema, cols, int64(n))
	wmArr.Release()
	kArr.Release()
	return rec, flags
}

// decode turns a received record back into a batch.
func decode(rec arrow.RecordBatch, flags byte) *vector.Batch {
	n := int(rec.NumRows())
	k := int(rec.NumCols())
	fs := rec.Schema().Fields()[:k-2]
	md := rec.Schema().Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fs, &md), rec.Columns()[:k-2], int64(n))
	b := vector.New(out)
	if flags&flagRowWatermark != 0 {
		// The values live in the received message's Go memory, which
		// stays while referenced: no copy.
		b.RowWatermark = rec.Column(k - 2).(*array.Int64).Int64Values()
	}
	if flags&flagKinds != 0 {
		ks := rec.Column(k - 1).(*array.Int8).Int8Values()
		b.Kinds = make([]vector.RowKind, n)
		for i, v := range ks {
			b.Kinds[i] = vector.RowKind(v)
		}
	}
	return b
}

// receive reads one shuffle stream (after its hello) and hands its
// messages to deliver, in order, until end of input.
func receive(stream flight.FlightService_DoPutServer, deliver func(engine.Message) error) error {
	var failed error
	ended := false
	ctl := &controlReader{r: stream, deliver: func(m engine.Message) {
		if failed == nil {
			failed = deliver(m)
		}
		if m.Kind == engine.KindEnd {
			ended = true
		}
	}}
	var rr *flight.Reader
	defer func() {
		if rr != nil {
			rr.Release()
		}
	}()
	for failed == nil && !ended {
		if rr == nil {
			r, err := flight.NewRecordReader(ctl)
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				if failed != nil || ended {
					break
				}
				return err
			}
			rr = r
		}
		if !rr.Next() {
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			break
		}
		md := rr.LatestAppMetadata()
		if len(md) != 2 || md[0] != metaData {
			return fmt.Errorf("record batch with metadata %q", md)
		}
		rec := rr.RecordBatch()
		b := decode(rec, md[1])
		if failed == nil {
			failed = deliver(engine.Message{Kind: engine.KindData, Batch: b})
		} else {
			b.Release()
		}
	}
	if failed != nil {
		return failed
	}
	if !ended {
		return fmt.Errorf("stream ended without end of input")
	}
	return nil
}

// controlReader passes the IPC messages of a stream to the record reader
// and delivers the metadata-only messages itself, at their place.
type controlReader struct {
	r       flight.DataStreamReader
	deliver func(engine.Message)
}

func (c *controlReader) Recv() (*flight.FlightData, error) {
	for {
		fd, err := c.r.Recv()
		if err != nil {
			return nil, err
		}
		if len(fd.DataHeader) > 0 {
			return fd, nil
		}
		md := fd.AppMetadata
		if len(md) == 0 {
			continue
		}
		switch {
		case md[0] == metaWatermark && len(md) == 9:
			c.deliver(engine.Message{Kind: engine.KindWatermark, Watermark: int64(binary.BigEndian.Uint64(md[1:]))})
		case md[0] == metaBarrier && len(md) == 9:
			c.deliver(engine.Message{Kind: engine.KindBarrier, Checkpoint: binary.BigEndian.Uint64(md[1:])})
		case md[0] == metaIdle && len(md) == 1:
			c.deliver(engine.Message{Kind: engine.KindIdle})
		case md[0] == metaActive && len(md) == 1:
			c.deliver(engine.Message{Kind: engine.KindActive})
		case md[0] == metaEnd:
			c.deliver(engine.Message{Kind: engine.KindEnd})
			return nil, io.EOF
		default:
			return nil, fmt.Errorf("unknown shuffle message %q", md)
		}
	}
}
