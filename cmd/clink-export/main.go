// Command clink-export writes a checkpoint's state as Parquet files or
// Iceberg table snapshots. It is what `clink state-export --format=parquet`
// and `--format=iceberg` run: a binary of its own because arrow-go's
// Parquet writer brings gRPC (about 14 MB more resident memory at every
// start) and iceberg-go's initialization costs about 130 ms and 30 MB,
// which the engine binary must not pay.
//
// Usage:
//
//	clink-export --format parquet|iceberg --out DIR
//	             [--iceberg-catalog sqlite://PATH|postgres://...]
//	             [--operator OP] [--slot S] CHECKPOINT
//
// CHECKPOINT is a chk-<id> directory. It prints one line per file or table
// snapshot written (name, rows) and exits 1 on an error, 2 on bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/checkpoint/stateio/iceberg"
	"github.com/clink-dev/clink/checkpoint/stateio/parquet"
)

func main() {
	fs := flag.NewFlagSet("clink-export", flag.ContinueOnError)
	format := fs.String("format", "parquet", "parquet (a ZSTD Parquet file per part) or iceberg (a snapshot of table clink.<operator> per operator)")
	out := fs.String("out", "", "the output directory (iceberg: default catalog DIR/catalog.db, warehouse DIR/warehouse)")
	catalog := fs.String("iceberg-catalog", "", "iceberg: the SQL catalog, sqlite://PATH or postgres://USER:PASSWORD@HOST/DB (default sqlite://OUT/catalog.db)")
	operator := fs.String("operator", "", "only this operator's parts")
	slot := fs.String("slot", "", "only this slot's rows")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 || *out == "" || (*format != "parquet" && *format != "iceberg") {
		fmt.Fprintln(os.Stderr, "usage: clink-export --format parquet|iceberg --out DIR [--iceberg-catalog URL] [--operator OP] [--slot S] CHECKPOINT")
		os.Exit(2)
	}
	c, err := stateio.Open(fs.Arg(0), 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sel := stateio.Selection{Operator: *operator, Slot: *slot}
	var done []stateio.Exported
	if *format == "iceberg" {
		done, err = iceberg.Export(ctx, c, iceberg.Options{Selection: sel, Dir: *out, Catalog: *catalog})
	} else {
		done, err = stateio.Export(ctx, c, stateio.ExportOptions{Selection: sel, Format: stateio.Parquet, Dir: *out, WriteParquet: parquet.Write})
	}
	for _, e := range done {
		fmt.Printf("%s\t%d rows\n", e.Path, e.Rows)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
