// Command clink-iceberg exports a checkpoint's state to Iceberg tables. It
// is what `clink state-export --format=iceberg` runs: a binary of its own
// because iceberg-go's package initialization costs about 130 ms and 30 MB
// at every start, which the engine binary must not pay.
//
// Usage:
//
//	clink-iceberg --out DIR [--iceberg-catalog sqlite://PATH|postgres://...]
//	              [--operator OP] [--slot S] CHECKPOINT
//
// CHECKPOINT is a chk-<id> directory. It prints one line per table
// snapshot written (table, rows) and exits 1 on an error, 2 on bad usage.
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
)

func main() {
	fs := flag.NewFlagSet("clink-iceberg", flag.ContinueOnError)
	out := fs.String("out", "", "the output directory: default catalog DIR/catalog.db, warehouse DIR/warehouse")
	catalog := fs.String("iceberg-catalog", "", "the SQL catalog, sqlite://PATH or postgres://USER:PASSWORD@HOST/DB (default sqlite://OUT/catalog.db)")
	operator := fs.String("operator", "", "only this operator's parts")
	slot := fs.String("slot", "", "only this slot's rows")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: clink-iceberg --out DIR [--iceberg-catalog URL] [--operator OP] [--slot S] CHECKPOINT")
		os.Exit(2)
	}
	c, err := stateio.Open(fs.Arg(0), 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done, err := iceberg.Export(ctx, c, iceberg.Options{Selection: stateio.Selection{Operator: *operator, Slot: *slot}, Dir: *out, Catalog: *catalog})
	for _, e := range done {
		fmt.Printf("%s\t%d rows\n", e.Path, e.Rows)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
