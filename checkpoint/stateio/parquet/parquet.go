// Package parquet writes state records as a Parquet file (ZSTD, the Arrow
// schema and its clink.* metadata stored). It is apart from stateio so
// that only the exporter binary links arrow-go's Parquet writer, which
// brings gRPC with it (pqarrow imports Flight).
package parquet

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Write writes recs, of schema, to w as one Parquet file.
func Write(w io.Writer, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	fw, err := newFileWriter(w, mem, schema)
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

// NewWriter opens a Parquet file of schema on w, to which records are
// written one by one (stateio.FileOptions.NewParquetWriter; its result is
// a stateio.RecordWriter); Close ends the file.
func NewWriter(w io.Writer, mem memory.Allocator, schema *arrow.Schema) (interface {
	Write(arrow.RecordBatch) error
	Close() error
}, error) {
	fw, err := newFileWriter(w, mem, schema)
	if err != nil {
		return nil, err
	}
	return fw, nil
}

func newFileWriter(w io.Writer, mem memory.Allocator, schema *arrow.Schema) (*pqarrow.FileWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy("clink state-export"),
	)
	return pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
}
