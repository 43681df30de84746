// Package interop checks that what Clink writes opens in other engines,
// with no Clink code on the reading side: checkpoint state exported to
// Parquet read by DuckDB (docs/state-format.md, "Reading state without
// Clink").
//
// It is a module of its own so that DuckDB (cgo, large prebuilt libraries)
// never enters the main module's build: run it with `make interop`.
package interop
