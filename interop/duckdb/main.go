// Command duckdb runs SQL with DuckDB (through duckdb-go, the same engine
// as DuckDB's CLI) where the CLI is not installed, e.g. for the tutorial
// (examples/kafka-to-clickhouse/README.md): `go run ./duckdb -csv -c
// "SELECT ... FROM 'state.parquet'"` from interop/. It knows only what the
// tutorial uses of the CLI's flags: -c SQL runs one statement on an
// in-memory database, -csv prints its rows as CSV with a header, as
// `duckdb -csv -c` does (NULL as an empty field).
package main

import (
	"database/sql"
	"encoding/csv"
	"flag"
	"fmt"
	"os"

	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb"
)

func main() {
	query := flag.String("c", "", "the SQL statement to run")
	asCSV := flag.Bool("csv", false, "print the rows as CSV with a header (the only output format)")
	flag.Parse()
	if *query == "" || !*asCSV || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: duckdb -csv -c SQL")
		os.Exit(2)
	}
	if err := run(*query); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(query string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	w := csv.NewWriter(os.Stdout)
	if err := w.Write(cols); err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	rec := make([]string, len(cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			rec[i] = v.String // NULL: ""
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	w.Flush()
	return w.Error()
}
