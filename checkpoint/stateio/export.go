package stateio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
)

// Format is an export format.
type Format string

const (
	// Parquet writes one Parquet file per part (<operator>-<subtask>.parquet,
	// ZSTD), with the part's columns and its clink.* schema metadata as
	// key-value metadata. DuckDB, Spark and pandas read them as they are.
	Parquet Format = "parquet"
	// Arrow writes one uncompressed Arrow IPC file per part
	// (<operator>-<subtask>.arrow), for readers without IPC body
	// compression.
	Arrow Format = "arrow"
)

// ExportOptions configure Export.
type ExportOptions struct {
	Selection
	Format Format
	// Dir receives the files (created if needed). Existing files of the
	// same names are replaced.
	Dir string
	// Mem allocates; nil is memory.DefaultAllocator.
	Mem memory.Allocator
	// WriteParquet writes one Parquet file (package stateio/parquet's
	// Write); required for Format Parquet. It is passed in so that only
	// binaries that export Parquet link arrow-go's Parquet writer.
	WriteParquet func(w io.Writer, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) error
}

// Exported says what one part or table export wrote.
type Exported struct {
	Path string // a file, or an Iceberg table's name
	Rows int64
}

// Export writes the selected state of c in opts.Format, a file per part,
// and returns what it wrote, in manifest order (package iceberg exports to
// Iceberg tables). A file is written under a temporary name and
// renamed when complete, so a failed export leaves no partial file.
func Export(ctx context.Context, c *checkpoint.Checkpoint, opts ExportOptions) ([]Exported, error) {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("export: no output directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if opts.Format != Parquet && opts.Format != Arrow {
		return nil, fmt.Errorf("export: unknown format %q (parquet or arrow)", opts.Format)
	}
	if opts.Format == Parquet && opts.WriteParquet == nil {
		return nil, fmt.Errorf("export: no Parquet writer (ExportOptions.WriteParquet)")
	}
	var out []Exported
	err := Each(c, opts.Selection, func(p *checkpoint.Part) error {
		recs, err := SelectRows(opts.Mem, p, opts.Slot)
		if err != nil {
			return err
		}
		defer release(recs)
		e, err := writePart(opts, p, recs)
		if err != nil {
			return err
		}
		out = append(out, e)
		return ctx.Err()
	})
	return out, err
}

func writePart(opts ExportOptions, p *checkpoint.Part, recs []arrow.RecordBatch) (Exported, error) {
	name := strings.TrimSuffix(filepath.Base(p.Path), ".arrow") + "." + string(opts.Format)
	path := filepath.Join(opts.Dir, name)
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	err := writeAtomic(path, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 1<<20)
		var err error
		if opts.Format == Parquet {
			err = opts.WriteParquet(w, opts.Mem, p.Schema, recs)
		} else {
			err = writeArrow(w, opts.Mem, p.Schema, recs)
		}
		if err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return Exported{}, fmt.Errorf("export %s: %s: %w", p.Path, path, err)
	}
	return Exported{Path: path, Rows: rows}, nil
}

func writeArrow(w *bufio.Writer, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := fw.Write(r); err != nil {
			fw.Close()
			return err
		}
	}
	return fw.Close()
}

// writeAtomic creates path through a temporary file in the same directory.
func writeAtomic(path string, fill func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// SelectRows returns the part's records, with only the rows of slot when
// slot is set. The caller releases them.
func SelectRows(mem memory.Allocator, p *checkpoint.Part, slot string) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for _, rec := range p.Records {
		if slot == "" {
			rec.Retain()
			out = append(out, rec)
			continue
		}
		r, err := filterSlot(mem, rec, slot)
		if err != nil {
			release(out)
			return nil, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// filterSlot keeps the rows of slot: slices of each run of its rows,
// concatenated (nil when the record has none).
func filterSlot(mem memory.Allocator, rec arrow.RecordBatch, slot string) (arrow.RecordBatch, error) {
	slots := rec.Column(0).(*array.String)
	var runs [][2]int64
	n := int(rec.NumRows())
	for i := 0; i < n; {
		if slots.Value(i) != slot {
			i++
			continue
		}
		j := i
		for j < n && slots.Value(j) == slot {
			j++
		}
		runs = append(runs, [2]int64{int64(i), int64(j)})
		i = j
	}
	switch {
	case len(runs) == 0:
		return nil, nil
	case len(runs) == 1:
		return rec.NewSlice(runs[0][0], runs[0][1]), nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	var rows int64
	for _, r := range runs {
		rows += r[1] - r[0]
	}
	for c := range cols {
		pieces := make([]arrow.Array, len(runs))
		for k, r := range runs {
			pieces[k] = array.NewSlice(rec.Column(c), r[0], r[1])
		}
		col, err := array.Concatenate(pieces, mem)
		release(pieces)
		if err != nil {
			release(cols[:c])
			return nil, err
		}
		cols[c] = col
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rows)
	release(cols)
	return out, nil
}

func release[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		x.Release()
	}
}
