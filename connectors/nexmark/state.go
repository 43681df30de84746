package nexmark

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
)

// The source's state: one raw row per split the subtask owns (slot
// splits) with the index of the split's next event and the subtask's max
// event time; one raw row (slot stream) with the stream's definition, so a
// restore continues the same stream; and one raw row (slot watermark) with
// the source watermark emitted last.
var sourceSlots = []checkpoint.Slot{
	{Name: "splits", Raw: true, Values: []arrow.Field{
		{Name: "split", Type: arrow.PrimitiveTypes.Int32},
		{Name: "next_event", Type: arrow.PrimitiveTypes.Int64},
		{Name: "max_ts", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "stream", Raw: true, Values: []arrow.Field{
		{Name: "seed", Type: arrow.PrimitiveTypes.Int64},
		{Name: "events_per_second", Type: arrow.PrimitiveTypes.Int64},
		{Name: "base_time_ms", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "watermark", Raw: true, Values: []arrow.Field{
		{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
	}},
}

var _ engine.CheckpointedSource = (*Source)(nil)

// SetBarriers takes the runtime's checkpoint barrier requests.
func (s *Source) SetBarriers(b *engine.Barriers) { s.barriers = b }

// SnapshotState records each owned split's next event. It runs in the
// source's goroutine at a barrier (every event before the cursor has been
// emitted), or after Run returned.
func (s *Source) SnapshotState(snap *engine.Snapshot) error {
	p, err := snap.Open(sourceSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	cursor := s.cursor
	maxTS, lastWM := s.maxTS, s.lastWM
	if !s.started {
		cursor = s.start()
		if !s.restored {
			maxTS, lastWM = engine.MinWatermark, engine.MinWatermark
		}
	}
	for sp := 0; sp < Splits; sp++ {
		if !s.own[sp] {
			continue
		}
		b.Raw("splits")
		b.Value("split").(*array.Int32Builder).Append(int32(sp))
		b.Value("next_event").(*array.Int64Builder).Append(max(s.resume[sp], firstInSplit(cursor, sp)))
		b.Value("max_ts").(*array.Int64Builder).Append(maxTS)
	}
	cfg := s.gen.Config()
	b.Raw("stream")
	b.Value("seed").(*array.Int64Builder).Append(cfg.Seed)
	b.Value("events_per_second").(*array.Int64Builder).Append(cfg.Rate)
	b.Value("base_time_ms").(*array.Int64Builder).Append(cfg.BaseTime)
	b.Raw("watermark")
	b.Value("watermark").(*array.Int64Builder).Append(lastWM)
	return p.WriteRows(b)
}

// RestoreState makes the next Run continue every owned split where the
// checkpoint left it. The parts of every subtask are read, so the
// checkpoint may have been taken at another parallelism.
func (s *Source) RestoreState(r *engine.Restore) error {
	s.restored = true
	s.resume = [Splits]int64{}
	s.maxTS, s.lastWM = engine.MinWatermark, engine.MinWatermark
	minTS, seen := int64(0), false
	cfg := s.gen.Config()
	for _, part := range r.Parts {
		for _, rec := range part.Records {
			slot := rec.Column(0).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				switch slot.Value(i) {
				case "splits":
					sp, _ := checkpoint.Column(rec, "split").(*array.Int32)
					next, _ := checkpoint.Column(rec, "next_event").(*array.Int64)
					ts, _ := checkpoint.Column(rec, "max_ts").(*array.Int64)
					if sp == nil || next == nil || ts == nil {
						return fmt.Errorf("%s: splits rows lack a column", part.Path)
					}
					n := int(sp.Value(i))
					if n < 0 || n >= Splits {
						return fmt.Errorf("%s: split %d out of range", part.Path, n)
					}
					if !s.own[n] {
						continue
					}
					s.resume[n] = next.Value(i)
					if !seen || ts.Value(i) < minTS {
						minTS, seen = ts.Value(i), true
					}
				case "stream":
					seed, _ := checkpoint.Column(rec, "seed").(*array.Int64)
					rate, _ := checkpoint.Column(rec, "events_per_second").(*array.Int64)
					base, _ := checkpoint.Column(rec, "base_time_ms").(*array.Int64)
					if seed == nil || rate == nil || base == nil {
						return fmt.Errorf("%s: stream row lacks a column", part.Path)
					}
					if seed.Value(i) != cfg.Seed || rate.Value(i) != cfg.Rate {
						return fmt.Errorf("nexmark source '%s': the checkpoint's stream has seed %d and events_per_second %d, the table says %d and %d",
							s.table.Name, seed.Value(i), rate.Value(i), cfg.Seed, cfg.Rate)
					}
					if base.Value(i) != cfg.BaseTime {
						if s.baseSet {
							return fmt.Errorf("nexmark source '%s': the checkpoint's stream has base_time_ms %d, the table says %d", s.table.Name, base.Value(i), cfg.BaseTime)
						}
						// A paced stream keeps the clock it started with.
						cfg.BaseTime = base.Value(i)
						s.gen = NewGenerator(cfg)
					}
				case "watermark":
					wm, _ := checkpoint.Column(rec, "watermark").(*array.Int64)
					if wm == nil {
						return fmt.Errorf("%s: watermark row lacks its column", part.Path)
					}
					s.lastWM = max(s.lastWM, wm.Value(i))
				}
			}
		}
	}
	if seen {
		// The slowest split's time: no restored event is late by it.
		s.maxTS = minTS
	}
	return nil
}
