package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clink-dev/clink/connectors"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// decodePool is the byte budget of the decoder's buffer pool (see
// vector.Pool): enough for the batches in flight downstream.
const decodePool = 32 << 20

var _ connectors.SourceValidator = Connector{}

// ValidateSource refuses what NewSource would without touching the path:
// a format it cannot read, a column type JSON cannot fill. That the path
// exists is checked where the job runs.
func (Connector) ValidateSource(t *connectors.Table) error {
	if f := t.Options["format"]; f != "" && f != "json" {
		return &connectors.OptionError{Key: "format", Msg: fmt.Sprintf("file source '%s': format '%s' is not readable yet (only 'json'; 'parquet' is a sink format)", t.Name, f)}
	}
	if err := cjson.CheckSchema(t.Schema); err != nil {
		return fmt.Errorf("file source '%s': %w", t.Name, err)
	}
	return nil
}

// NewSource opens the table's path for reading.
func (c Connector) NewSource(t *connectors.Table) (engine.Source, error) {
	if err := c.ValidateSource(t); err != nil {
		return nil, err
	}
	path := t.Options["path"]
	files, err := listFiles(path)
	if err != nil {
		return nil, fmt.Errorf("file source '%s': %w", t.Name, err)
	}
	if p := max(t.Runtime.Parallelism, 1); p > 1 || t.Runtime.Subtask > 0 {
		// Subtask i of p reads the files whose index (in name order) mod
		// p is i, as Kafka partitions are assigned.
		var mine []string
		for i, f := range files {
			if i%p == t.Runtime.Subtask {
				mine = append(mine, f)
			}
		}
		files = mine
	}
	return &Source{table: t, files: files, skip: t.Options["on_error"] == "skip"}, nil
}

func listFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("path '%s': %w", path, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != path && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Source reads JSON lines. Each file is one partition with its own
// watermark; files are read one after another in name order, and a file
// holds the watermark back only while it is being read.
type Source struct {
	table   *connectors.Table
	files   []string
	skip    bool
	skipped atomic.Int64
	rows    atomic.Int64

	// Checkpoint state: the runtime's barrier requests, the reading
	// position while Run runs, and the position a restore resumes at.
	barriers *engine.Barriers
	readers  []*lineReader
	wms      *engine.PartitionWatermarks
	lastWM   int64
	resume   map[string]filePos
}

// filePos is where reading a file resumes.
type filePos struct {
	offset, line int64
	done         bool
	maxTS        int64
}

var _ engine.Source = (*Source)(nil)
var _ engine.StatsReporter = (*Source)(nil)

// Stats reports rows read and bad records skipped.
func (s *Source) Stats() map[string]int64 {
	return map[string]int64{"rows_read": s.rows.Load(), "records_skipped": s.skipped.Load()}
}

// segment is a run of rows of one batch from one partition.
type segment struct{ part, from int }

// Run reads every file to its end.
func (s *Source) Run(ctx context.Context, emit func(engine.Message) error) error {
	t := s.table
	rt := t.Runtime
	batchSize := rt.BatchSize
	if batchSize <= 0 {
		batchSize = 8192
	}
	linger := rt.Linger
	if linger <= 0 {
		linger = 20 * time.Millisecond
	}
	dec := cjson.NewDecoder(t.Schema, vector.NewPool(rt.Mem, decodePool), cjson.Options{Needed: t.Needed, Required: t.Required()})
	defer dec.Release()
	wms := engine.NewPartitionWatermarks(len(s.files), t.WatermarkLag)
	s.wms = wms
	lastWM := engine.MinWatermark
	if s.resume != nil {
		if err := s.applyResume(); err != nil {
			return err
		}
		lastWM = s.lastWM
	}
	var segs []segment
	batchStart := time.Now()

	flush := func() error {
		n := dec.Len()
		if n == 0 {
			return nil
		}
		rec := dec.Flush()
		b := vector.New(rec)
		if t.EventTimeCol >= 0 {
			b.RowWatermark = make([]int64, n)
			ts, valid := engine.EventTimes(rec.Column(t.EventTimeCol))
			for k, sg := range segs {
				to := n
				if k+1 < len(segs) {
					to = segs[k+1].from
				}
				var v func(int) bool
				if valid != nil {
					from := sg.from
					v = func(i int) bool { return valid(from + i) }
				}
				wms.Observe(sg.part, ts[sg.from:to], v, b.RowWatermark[sg.from:to])
			}
		}
		segs = segs[:0]
		s.rows.Add(int64(n))
		if err := emit(engine.Message{Kind: engine.KindData, Batch: b}); err != nil {
			return err
		}
		if t.EventTimeCol >= 0 {
			if wm := wms.Current(); wm > lastWM {
				lastWM = wm
				s.lastWM = wm
				return emit(engine.Message{Kind: engine.KindWatermark, Watermark: wm})
			}
		}
		return nil
	}
	// barrier emits the requested checkpoint barriers after the rows read
	// so far: the reading positions then cover exactly what went before.
	barrier := func() error {
		if !s.barriers.Pending() {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		for {
			id, ok := s.barriers.Next()
			if !ok {
				return nil
			}
			if err := emit(engine.Message{Kind: engine.KindBarrier, Checkpoint: id}); err != nil {
				return err
			}
		}
	}

	// Files are read round-robin, a batch's worth of lines at a time, so
	// every partition's watermark advances and windows fire while the
	// directory is read. Lines of one file keep their order.
	readers := make([]*lineReader, len(s.files))
	s.readers = readers
	var closeMu sync.Mutex
	defer func() {
		closeMu.Lock()
		defer closeMu.Unlock()
		for _, r := range readers {
			if r != nil {
				r.close()
			}
		}
	}()
	// A job stopped while a read blocks (a FIFO) unblocks it by closing.
	stop := context.AfterFunc(ctx, func() {
		closeMu.Lock()
		defer closeMu.Unlock()
		for _, r := range readers {
			if r != nil {
				r.f.Close()
			}
		}
	})
	defer stop()
	remaining := len(s.files)
	for part := range s.files {
		if wms.Done(part) {
			remaining--
		}
	}
	for remaining > 0 {
		for part, name := range s.files {
			if err := barrier(); err != nil {
				return err
			}
			r := readers[part]
			if r == nil {
				if wms.Done(part) {
					continue
				}
				var err error
				if r, err = openLines(name); err != nil {
					return fmt.Errorf("file source '%s': %w", t.Name, err)
				}
				if err := s.seek(r, name); err != nil {
					return err
				}
				closeMu.Lock()
				readers[part] = r
				closeMu.Unlock()
				wms.Start(part)
			}
			for n := 0; n < batchSize; n++ {
				var deadline time.Time // only pipes wait with a deadline
				if r.pollable {
					deadline = time.Now().Add(linger)
					if dec.Len() > 0 {
						deadline = batchStart.Add(linger)
					}
				}
				line, err := r.next(deadline)
				if err == io.EOF {
					break
				}
				if err == errLinger {
					// A pipe with nothing to say: emit what waited long
					// enough and give the other files their turn.
					if time.Since(batchStart) >= linger {
						if err := flush(); err != nil {
							return err
						}
					}
					break
				}
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return fmt.Errorf("file source '%s': %s: %w", t.Name, name, err)
				}
				if isBlank(line) {
					continue
				}
				if dec.Len() == 0 {
					batchStart = time.Now()
				}
				if len(segs) == 0 || segs[len(segs)-1].part != part {
					segs = append(segs, segment{part: part, from: dec.Len()})
				}
				if derr := dec.Append(line); derr != nil {
					if !s.skip {
						return fmt.Errorf("file source '%s': %s:%d: %w", t.Name, name, r.lineNo, derr)
					}
					s.skipped.Add(1)
				}
				if dec.Len() >= batchSize || (dec.Len()&255 == 0 && time.Since(batchStart) >= linger) {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if r.eof {
				// The file's buffered rows keep its watermark until flushed.
				if err := flush(); err != nil {
					return err
				}
				closeMu.Lock()
				r.close()
				readers[part] = nil
				closeMu.Unlock()
				wms.Finish(part)
				remaining--
			}
		}
	}
	return flush()
}

// lineReader yields a file's lines without copying when they fit the
// buffer. On a pipe or FIFO a read waits at most until a deadline, so a
// partly filled batch still leaves after its linger time.
type lineReader struct {
	f        *os.File
	r        *bufio.Reader
	long     []byte
	partial  []byte
	lineNo   int
	pos      int64 // bytes up to the end of the last line returned
	eof      bool
	pollable bool
}

// errLinger says a pipe had no complete line before the deadline.
var errLinger = errors.New("no line before the linger deadline")

func openLines(name string) (*lineReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	// A small file needs no 1 MiB buffer: jobs over many small files
	// (the logic tests) spent a fifth of their CPU clearing it.
	size := 1 << 20
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() && fi.Size() < int64(size) {
		size = max(int(fi.Size()), 4096)
	}
	l := &lineReader{f: f, r: bufio.NewReaderSize(f, size)}
	if err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket|os.ModeCharDevice) != 0 {
		l.pollable = f.SetReadDeadline(time.Time{}) == nil
	}
	return l, nil
}

// next returns the next line without its end of line; the slice is valid
// until the next call.
func (l *lineReader) next(deadline time.Time) ([]byte, error) {
	if l.eof {
		return nil, io.EOF
	}
	if l.pollable {
		l.f.SetReadDeadline(deadline)
	}
	line, err := l.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(l.partial) > 0 {
		l.long = append(append(l.long[:0], l.partial...), line...)
		l.partial = l.partial[:0]
		for err == bufio.ErrBufferFull {
			line, err = l.r.ReadSlice('\n')
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		l.partial = append(l.partial, line...)
		return nil, errLinger
	}
	if err == io.EOF {
		l.eof = true
		if len(line) == 0 {
			return nil, io.EOF
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	l.lineNo++
	l.pos += int64(len(line))
	if l.pos == int64(len(line)) {
		// A UTF-8 byte-order mark may start a file (editors on Windows
		// write one); it is not part of the first record.
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	return trimEOL(line), nil
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte-order mark.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (l *lineReader) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
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
