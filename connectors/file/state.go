package file

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
)

// The file source's state: one raw row per file (slot file_offsets) with
// the byte offset and line number reading resumes at, whether the file is
// done, and its partition's max event time; and one raw row (slot
// watermark) with the source watermark emitted last.
var sourceSlots = []checkpoint.Slot{
	{Name: "file_offsets", Raw: true, Values: []arrow.Field{
		{Name: "file", Type: arrow.BinaryTypes.String},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
		{Name: "line", Type: arrow.PrimitiveTypes.Int64},
		{Name: "done", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "max_ts", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "watermark", Raw: true, Values: []arrow.Field{
		{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
	}},
}

var (
	_ engine.CheckpointedSource = (*Source)(nil)
)

// SetBarriers takes the runtime's checkpoint barrier requests.
func (s *Source) SetBarriers(b *engine.Barriers) { s.barriers = b }

// SnapshotState records where each file's reading stands. It runs in the
// source's goroutine, at a barrier (or after Run, when the source is done).
func (s *Source) SnapshotState(snap *engine.Snapshot) error {
	p, err := snap.Open(sourceSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	var parts []engine.PartitionState
	if s.wms != nil {
		parts, _ = s.wms.State()
	}
	for i, name := range s.files {
		pos := s.resume[name]
		if parts != nil {
			pos.maxTS, pos.done = parts[i].MaxTS, parts[i].Done
			if r := s.readers[i]; r != nil {
				pos.offset, pos.line = r.pos, int64(r.lineNo)
			}
		} else if s.resume == nil {
			pos.maxTS = engine.MinWatermark
		}
		b.Raw("file_offsets")
		b.Value("file").(*array.StringBuilder).Append(name)
		b.Value("offset").(*array.Int64Builder).Append(pos.offset)
		b.Value("line").(*array.Int64Builder).Append(pos.line)
		b.Value("done").(*array.BooleanBuilder).Append(pos.done)
		b.Value("max_ts").(*array.Int64Builder).Append(pos.maxTS)
	}
	b.Raw("watermark")
	b.Value("watermark").(*array.Int64Builder).Append(s.lastWM)
	return p.WriteRows(b)
}

// RestoreState makes the next Run resume every file where the checkpoint
// left it.
func (s *Source) RestoreState(r *engine.Restore) error {
	s.resume = map[string]filePos{}
	s.lastWM = engine.MinWatermark
	for _, part := range r.Parts {
		for _, rec := range part.Records {
			slot := rec.Column(0).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				switch slot.Value(i) {
				case "file_offsets":
					file, _ := checkpoint.Column(rec, "file").(*array.String)
					off, _ := checkpoint.Column(rec, "offset").(*array.Int64)
					line, _ := checkpoint.Column(rec, "line").(*array.Int64)
					done, _ := checkpoint.Column(rec, "done").(*array.Boolean)
					maxTS, _ := checkpoint.Column(rec, "max_ts").(*array.Int64)
					if file == nil || off == nil || line == nil || done == nil || maxTS == nil {
						return fmt.Errorf("%s: file_offsets rows lack a column", part.Path)
					}
					s.resume[file.Value(i)] = filePos{offset: off.Value(i), line: line.Value(i), done: done.Value(i), maxTS: maxTS.Value(i)}
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
	for name, pos := range s.resume {
		if pos.done || s.table.Runtime.Parallelism > 1 || s.table.Runtime.Subtask > 0 {
			// (At parallelism > 1 another subtask may read it.)
			continue
		}
		found := false
		for _, f := range s.files {
			found = found || f == name
		}
		if !found {
			return fmt.Errorf("file source '%s': the checkpoint was reading %s (at line %d), which is no longer there", s.table.Name, name, pos.line)
		}
	}
	return nil
}

// applyResume puts the restored watermarks and finished files in place.
func (s *Source) applyResume() error {
	for i, name := range s.files {
		if pos, ok := s.resume[name]; ok {
			s.wms.SetState(i, engine.PartitionState{MaxTS: pos.maxTS, Done: pos.done})
		}
	}
	s.wms.SetLast(s.lastWM)
	return nil
}

// seek moves a freshly opened file to its restored position.
func (s *Source) seek(r *lineReader, name string) error {
	pos, ok := s.resume[name]
	if !ok || pos.offset == 0 {
		return nil
	}
	if r.pollable {
		return fmt.Errorf("file source '%s': cannot resume %s at byte %d: it is a pipe", s.table.Name, name, pos.offset)
	}
	fi, err := r.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < pos.offset {
		return fmt.Errorf("file source '%s': %s has %d bytes, but the checkpoint resumes it at byte %d (the file changed)", s.table.Name, name, fi.Size(), pos.offset)
	}
	if _, err := r.f.Seek(pos.offset, io.SeekStart); err != nil {
		return fmt.Errorf("file source '%s': %s: %w", s.table.Name, name, err)
	}
	r.r.Reset(r.f)
	r.pos, r.lineNo = pos.offset, int(pos.line)
	return nil
}
