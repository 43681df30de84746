package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// PartWriter writes the state of one operator subtask into one Arrow IPC
// file. One goroutine uses a PartWriter; different parts of a checkpoint
// may be written concurrently.
type PartWriter struct {
	w      *Writer
	info   PartInfo
	path   string
	layout *layout
	schema *arrow.Schema
	maxPar int

	f    ObjectWriter
	buf  *bufio.Writer
	sum  hash.Hash
	n    int64 // bytes written so far
	ipcw *ipc.FileWriter
	err  error // first failure; sticky
	done bool
}

// Schema is the part's schema with its file metadata. Records written must
// have the same fields (their metadata may differ).
func (p *PartWriter) Schema() *arrow.Schema { return p.schema }

// Slots are the part's slot declarations.
func (p *PartWriter) Slots() []Slot { return p.layout.slots }

// Write appends rec. The caller keeps its reference to rec. Every row is
// checked against the format's invariants; a bad row fails the part (and so
// the checkpoint's Commit).
func (p *PartWriter) Write(rec arrow.RecordBatch) error {
	if p.err != nil {
		return p.err
	}
	if p.done {
		return fmt.Errorf("checkpoint: %s: write after Close", p.path)
	}
	if !rec.Schema().Equal(p.schema) {
		return p.fail(fmt.Errorf("checkpoint: %s: record schema %s does not match the part schema %s", p.path, rec.Schema(), p.schema))
	}
	if err := p.layout.checkRecord(rec, p.maxPar); err != nil {
		return p.fail(fmt.Errorf("checkpoint: %s: %w", p.path, err))
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if rec.Schema() != p.schema {
		rec = array.NewRecordBatch(p.schema, rec.Columns(), rec.NumRows())
		defer rec.Release()
	}
	if err := p.ipcw.Write(rec); err != nil {
		return p.fail(fmt.Errorf("checkpoint: %s: %w", p.path, err))
	}
	p.info.Rows += rec.NumRows()
	return nil
}

// Close finishes the file (footer, flush, fsync) and records its size and
// SHA-256 for the manifest. The part counts for Commit only once closed.
func (p *PartWriter) Close() error {
	if p.done {
		return p.err
	}
	p.done = true
	if p.err == nil {
		if err := p.ipcw.Close(); err != nil {
			p.err = fmt.Errorf("checkpoint: %s: %w", p.path, err)
		} else if err := p.buf.Flush(); err != nil {
			p.err = fmt.Errorf("checkpoint: %s: %w", p.path, err)
		} else if err := p.f.Commit(); err != nil {
			p.err = fmt.Errorf("checkpoint: %s: %w", p.path, err)
		}
	}
	if p.err != nil {
		p.f.Abort()
	}
	p.info.Bytes = p.n
	p.info.SHA256 = hex.EncodeToString(p.sum.Sum(nil))
	p.w.partDone(p)
	return p.err
}

func (p *PartWriter) fail(err error) error {
	if p.err == nil {
		p.err = err
	}
	return err
}

// Write implements io.Writer for the IPC writer: file, checksum and size.
type partSink struct{ p *PartWriter }

func (s partSink) Write(b []byte) (int, error) {
	n, err := s.p.buf.Write(b)
	s.p.sum.Write(b[:n])
	s.p.n += int64(n)
	return n, err
}

func newPartWriter(w *Writer, op string, subtask int, l *layout, path string, f ObjectWriter) (*PartWriter, error) {
	p := &PartWriter{
		w:      w,
		info:   PartInfo{File: partFileName(op, subtask), Operator: op, Subtask: subtask},
		path:   path,
		layout: l,
		maxPar: w.store.opts.MaxParallelism,
		f:      f,
		buf:    bufio.NewWriterSize(f, 64<<10),
		sum:    sha256.New(),
	}
	p.schema = l.fileSchema(partMeta{operator: op, subtask: subtask, checkpointID: w.id, maxParallelism: p.maxPar, delta: l.delta})
	opts := []ipc.Option{ipc.WithSchema(p.schema), ipc.WithAllocator(w.store.opts.Allocator)}
	switch w.store.opts.Compression {
	case CompressZstd:
		opts = append(opts, ipc.WithZstd(), ipc.WithMinSpaceSavings(0.1))
	case CompressLZ4:
		opts = append(opts, ipc.WithLZ4(), ipc.WithMinSpaceSavings(0.1))
	}
	ipcw, err := ipc.NewFileWriter(partSink{p}, opts...)
	if err != nil {
		return nil, err
	}
	p.ipcw = ipcw
	return p, nil
}

func partFileName(op string, subtask int) string { return fmt.Sprintf("%s-%d.arrow", op, subtask) }

// Part is one decoded part file: its identity, slots and record batches.
// Release it when done.
type Part struct {
	Path           string
	Operator       string
	Subtask        int
	CheckpointID   uint64
	MaxParallelism int
	// Delta marks a delta part read on its own (ReadPartFile); a
	// checkpoint's ReadPart merges deltas with their chains.
	Delta   bool
	Slots   []Slot
	Schema  *arrow.Schema
	Records []arrow.RecordBatch
}

// NumRows is the number of state rows in the part.
func (p *Part) NumRows() int64 {
	var n int64
	for _, r := range p.Records {
		n += r.NumRows()
	}
	return n
}

// Release drops the part's records.
func (p *Part) Release() {
	for _, r := range p.Records {
		r.Release()
	}
	p.Records = nil
}

// ReadPartFile reads and decodes one part file on its own (no manifest, so
// no checksum): for tools that look at a single file.
func ReadPartFile(path string) (*Part, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &FileError{Path: path, Kind: ErrMissing, Err: errors.New("no such file")}
		}
		return nil, &FileError{Path: path, Err: err}
	}
	return DecodePart(path, data)
}

// DecodePart decodes the bytes of a part file; path only names it in
// errors. It checks the format version, the schema and metadata, the Arrow
// buffers (array.ValidateRecordFull) and every row invariant, so that
// corrupt input yields a *FileError and never a panic.
func DecodePart(path string, data []byte) (part *Part, err error) {
	alloc := &limitAllocator{limit: decodeLimit(len(data))}
	var recs []arrow.RecordBatch
	defer func() {
		if r := recover(); r != nil {
			err = fileErr(path, ErrCorrupt, "not a valid Arrow IPC file: %v", r)
		}
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			part = nil
		}
	}()
	if len(data) < 8 || !bytes.Equal(data[:6], []byte("ARROW1")) {
		return nil, fileErr(path, ErrCorrupt, "not an Arrow IPC file (bad magic; %d bytes)", len(data))
	}
	if err := verifyIPC(data); err != nil {
		return nil, fileErr(path, ErrCorrupt, "not a valid Arrow IPC file: %v", err)
	}
	rd, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, fileErr(path, ErrCorrupt, "not a valid Arrow IPC file: %v", err)
	}
	defer rd.Close()
	sc := rd.Schema()
	l, pm, err := parseSchema(sc)
	if err != nil {
		var ve *versionError
		if errors.As(err, &ve) {
			return nil, &FileError{Path: path, Kind: ErrVersion, Err: err}
		}
		return nil, &FileError{Path: path, Kind: ErrCorrupt, Err: err}
	}
	for i := 0; i < rd.NumRecords(); i++ {
		rec, err := rd.RecordBatchAt(i)
		if err != nil {
			return nil, fileErr(path, ErrCorrupt, "record batch %d: %v", i, err)
		}
		recs = append(recs, rec)
		if err := array.ValidateRecordFull(rec); err != nil {
			return nil, fileErr(path, ErrCorrupt, "record batch %d: %v", i, err)
		}
		if err := l.checkRecord(rec, pm.maxParallelism); err != nil {
			return nil, fileErr(path, ErrCorrupt, "record batch %d: %v", i, err)
		}
	}
	return &Part{
		Path:           path,
		Operator:       pm.operator,
		Subtask:        pm.subtask,
		CheckpointID:   pm.checkpointID,
		MaxParallelism: pm.maxParallelism,
		Delta:          pm.delta,
		Slots:          l.slots,
		Schema:         sc,
		Records:        recs,
	}, nil
}

// decodeLimit bounds what decoding may allocate (decompressed buffers), so
// a corrupt length cannot exhaust memory. Real parts are read only after
// their SHA-256 matched; zstd rarely expands state more than 100x.
func decodeLimit(n int) int64 { return 64<<20 + 1024*int64(n) }

// limitAllocator is Go-heap allocation with a budget; exceeding it panics,
// which DecodePart turns into an error.
type limitAllocator struct {
	used, limit int64
}

func (a *limitAllocator) Allocate(size int) []byte {
	if size < 0 || int64(size) > a.limit-a.used {
		panic(fmt.Sprintf("allocation of %d bytes exceeds the decode budget", size))
	}
	a.used += int64(size)
	return memory.DefaultAllocator.Allocate(size)
}

func (a *limitAllocator) Reallocate(size int, b []byte) []byte {
	if size > len(b) {
		extra := int64(size - len(b))
		if extra > a.limit-a.used {
			panic(fmt.Sprintf("allocation of %d bytes exceeds the decode budget", size))
		}
		a.used += extra
	}
	return memory.DefaultAllocator.Reallocate(size, b)
}

func (a *limitAllocator) Free(b []byte) { memory.DefaultAllocator.Free(b) }
