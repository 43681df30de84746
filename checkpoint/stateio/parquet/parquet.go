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
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy("clink state-export"),
	)
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
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
