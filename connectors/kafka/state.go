package kafka

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
)

// The Kafka source's state: one raw row per assigned partition (slot
// source_offsets) with the offset of the next record to read and the
// partition's max event time (its watermark before the lag), and one raw
// row (slot watermark) with the source watermark emitted last.
var sourceSlots = []checkpoint.Slot{
	{Name: "source_offsets", Raw: true, Values: []arrow.Field{
		{Name: "topic", Type: arrow.BinaryTypes.String},
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
		{Name: "max_ts", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "watermark", Raw: true, Values: []arrow.Field{
		{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
	}},
}

var _ engine.CheckpointedSource = (*Source)(nil)

// SetBarriers takes the runtime's checkpoint barrier requests.
func (s *Source) SetBarriers(b *engine.Barriers) { s.barriers = b }

// SnapshotState records each assigned partition's next offset and
// watermark. It runs in the source's goroutine at a barrier (every record
// before the offset has been emitted), or after Run returned.
func (s *Source) SnapshotState(snap *engine.Snapshot) error {
	p, err := snap.Open(sourceSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	lastWM := s.restoreWM
	if r := s.cur; r != nil {
		parts, _ := r.wms.State()
		lastWM = r.lastWM
		for i, st := range r.parts {
			b.Raw("source_offsets")
			b.Value("topic").(*array.StringBuilder).Append(s.topic)
			b.Value("partition").(*array.Int32Builder).Append(st.id)
			b.Value("offset").(*array.Int64Builder).Append(st.next)
			b.Value("max_ts").(*array.Int64Builder).Append(parts[i].MaxTS)
		}
	} else {
		// Not started (or nothing to read): the restored state as it was.
		for id, off := range s.restore {
			b.Raw("source_offsets")
			b.Value("topic").(*array.StringBuilder).Append(s.topic)
			b.Value("partition").(*array.Int32Builder).Append(id)
			b.Value("offset").(*array.Int64Builder).Append(off)
			ts, ok := s.restoreTS[id]
			if !ok {
				ts = engine.MinWatermark
			}
			b.Value("max_ts").(*array.Int64Builder).Append(ts)
		}
	}
	b.Raw("watermark")
	b.Value("watermark").(*array.Int64Builder).Append(lastWM)
	return p.WriteRows(b)
}

// RestoreState makes the next Run start each partition this subtask is
// assigned at the checkpoint's offset, with its watermark. Partitions the
// checkpoint does not know start per the table's options.
func (s *Source) RestoreState(r *engine.Restore) error {
	offsets := map[int32]int64{}
	s.restoreTS = map[int32]int64{}
	s.restoreWM = engine.MinWatermark
	for _, part := range r.Parts {
		for _, rec := range part.Records {
			slot := rec.Column(0).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				switch slot.Value(i) {
				case "source_offsets":
					topic, _ := checkpoint.Column(rec, "topic").(*array.String)
					pa, _ := checkpoint.Column(rec, "partition").(*array.Int32)
					off, _ := checkpoint.Column(rec, "offset").(*array.Int64)
					ts, _ := checkpoint.Column(rec, "max_ts").(*array.Int64)
					if topic == nil || pa == nil || off == nil || ts == nil {
						return fmt.Errorf("%s: source_offsets rows lack a column", part.Path)
					}
					if topic.Value(i) != s.topic {
						return fmt.Errorf("kafka source '%s': the checkpoint read topic %s, the table names %s", s.table.Name, topic.Value(i), s.topic)
					}
					id := pa.Value(i)
					// The partitions this subtask reads (Assign, at the
					// source's parallelism: the job's, or the table's
					// scan.parallelism).
					if rt := s.table.Runtime; int(id)%max(rt.Parallelism, 1) != rt.Subtask {
						continue
					}
					offsets[id] = off.Value(i)
					s.restoreTS[id] = ts.Value(i)
				case "watermark":
					wm, _ := checkpoint.Column(rec, "watermark").(*array.Int64)
					if wm == nil {
						return fmt.Errorf("%s: watermark row lacks its column", part.Path)
					}
					s.restoreWM = max(s.restoreWM, wm.Value(i))
				}
			}
		}
	}
	s.StartAt(offsets)
	return nil
}
