package stateio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
)

// The columns ExportFile adds to name the part a row comes from (the
// names state-query's table uses).
const (
	ColOperator = "operator"
	ColSubtask  = "subtask"
)

// fixedColumns is the number of fixed leading columns of a part
// (checkpoint.ColSlot to checkpoint.ColWindowEnd).
const fixedColumns = 5

// RecordWriter writes record batches of one schema to one file. It is an
// alias of an unnamed interface so that package stateio/parquet, which
// this package's tests import, can return one without importing stateio.
type RecordWriter = interface {
	Write(arrow.RecordBatch) error
	Close() error
}

// FileOptions configure ExportFile.
type FileOptions struct {
	Selection
	// Path is the Parquet file to write (its directory is created if
	// needed; a file of that name is replaced).
	Path string
	// Mem allocates; nil is memory.DefaultAllocator.
	Mem memory.Allocator
	// NewParquetWriter opens a Parquet writer of schema on w (package
	// stateio/parquet's NewWriter), passed in for the reason
	// ExportOptions.WriteParquet is.
	NewParquetWriter func(w io.Writer, mem memory.Allocator, schema *arrow.Schema) (RecordWriter, error)
}

// ExportFile writes the selected state of c as ONE Parquet file: every
// part's rows, in manifest order, under one schema (FileSchema): the fixed
// columns, the value columns of all parts by name, and operator and
// subtask. A part lacking a value column has nulls there. Like Export it
// writes under a temporary name and renames when complete.
func ExportFile(ctx context.Context, c *checkpoint.Checkpoint, opts FileOptions) (Exported, error) {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	switch {
	case opts.Path == "":
		return Exported{}, fmt.Errorf("export: no output file")
	case opts.NewParquetWriter == nil:
		return Exported{}, fmt.Errorf("export: no Parquet writer (FileOptions.NewParquetWriter)")
	}
	schema, err := FileSchema(c, opts.Selection)
	if err != nil {
		return Exported{}, err
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o755); err != nil {
		return Exported{}, fmt.Errorf("export: %w", err)
	}
	var rows int64
	err = writeAtomic(opts.Path, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		w, err := opts.NewParquetWriter(bw, opts.Mem, schema)
		if err != nil {
			return err
		}
		err = Each(c, opts.Selection, func(p *checkpoint.Part) error {
			n, err := writeUnion(w, opts.Mem, schema, p, opts.Slot)
			rows += n
			if err != nil {
				return err
			}
			return ctx.Err()
		})
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return Exported{}, fmt.Errorf("export %s: %w", opts.Path, err)
	}
	return Exported{Path: opts.Path, Rows: rows}, nil
}

// FileSchema is the schema of ExportFile's file: the fixed columns, then
// the value columns of the selected parts in order of first appearance,
// matched by name without regard to case (as SQL readers of the file
// match them; the first spelling is kept) and nullable, then operator
// (string) and subtask (int32). One name with two types is an error naming
// both parts: the file would have to cast one, so export one operator or a
// file per part instead. The schema metadata names the checkpoint
// (clink.checkpoint_id, clink.job, clink.fingerprint).
func FileSchema(c *checkpoint.Checkpoint, sel Selection) (*arrow.Schema, error) {
	var fields []arrow.Field
	seen := map[string]int{}
	from := map[string]string{} // column -> the part that declared it first
	for _, name := range []string{ColOperator, ColSubtask} {
		seen[name] = -1
	}
	err := Each(c, sel, func(p *checkpoint.Part) error {
		pf := p.Schema.Fields()
		if fields == nil {
			for _, f := range pf[:fixedColumns] {
				seen[strings.ToLower(f.Name)] = len(fields)
				fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
			}
		}
		for i, f := range pf {
			key := strings.ToLower(f.Name)
			k, dup := seen[key]
			switch {
			case i < fixedColumns && !arrow.TypeEqual(fields[i].Type, f.Type):
				return fmt.Errorf("%s: fixed column %s is %s, other parts' is %s", p.Path, f.Name, f.Type, fields[i].Type)
			case i < fixedColumns:
			case dup && k < 0:
				return fmt.Errorf("%s: value column %s has the name of the column that names a row's part; export a file per part", p.Path, f.Name)
			case dup && k < fixedColumns:
				return fmt.Errorf("%s: value column %s has the name of a fixed column", p.Path, f.Name)
			case dup && !arrow.TypeEqual(fields[k].Type, f.Type):
				return fmt.Errorf("column %s is %s in %s but %s in %s: one file cannot hold both; export one operator (--operator) or a file per part (--out DIR)",
					f.Name, fields[k].Type, from[key], f.Type, p.Path)
			case !dup:
				seen[key] = len(fields)
				from[key] = p.Path
				fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if fields == nil { // no parts: the fixed columns alone
		empty, err := checkpoint.Schema(nil)
		if err != nil {
			return nil, err
		}
		fields = append(fields, empty.Fields()[:fixedColumns]...)
	}
	fields = append(fields,
		arrow.Field{Name: ColOperator, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: ColSubtask, Type: arrow.PrimitiveTypes.Int32})
	md := arrow.NewMetadata(
		[]string{"clink.checkpoint_id", "clink.job", "clink.fingerprint"},
		[]string{strconv.FormatUint(c.ID, 10), c.Manifest.Job, c.Manifest.Fingerprint})
	return arrow.NewSchema(fields, &md), nil
}

// writeUnion writes part p's rows (of slot, if set) as records of schema
// and returns how many.
func writeUnion(w RecordWriter, mem memory.Allocator, schema *arrow.Schema, p *checkpoint.Part, slot string) (int64, error) {
	recs, err := SelectRows(mem, p, slot)
	if err != nil {
		return 0, err
	}
	defer release(recs)
	// at[i]: the part's column for schema column i, -1 for nulls.
	at := make([]int, schema.NumFields())
	for i, f := range schema.Fields() {
		at[i] = -1
		for j, pf := range p.Schema.Fields() {
			if strings.EqualFold(pf.Name, f.Name) {
				at[i] = j
				break
			}
		}
	}
	nf := schema.NumFields()
	var n int64
	for _, rec := range recs {
		rows := int(rec.NumRows())
		cols := make([]arrow.Array, nf)
		for i, f := range schema.Fields() {
			switch {
			case i == nf-2:
				cols[i] = constString(mem, p.Operator, rows)
			case i == nf-1:
				cols[i] = constInt32(mem, int32(p.Subtask), rows)
			case at[i] >= 0:
				cols[i] = rec.Column(at[i])
				cols[i].Retain()
			default:
				cols[i] = array.MakeArrayOfNull(mem, f.Type, rows)
			}
		}
		out := array.NewRecordBatch(schema, cols, int64(rows))
		release(cols)
		err := w.Write(out)
		out.Release()
		if err != nil {
			return n, err
		}
		n += int64(rows)
	}
	return n, nil
}

func constString(mem memory.Allocator, v string, n int) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(n * len(v))
	for range n {
		b.Append(v)
	}
	return b.NewArray()
}

func constInt32(mem memory.Allocator, v int32, n int) arrow.Array {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	b.Reserve(n)
	for range n {
		b.UnsafeAppend(v)
	}
	return b.NewArray()
}
