// Package rowstore retains input rows for operators that emit them later
// (Top-N): a Store keeps the batches rows came in and indexes rows
// by key (linked lists of int32s) and by time (sorted runs under a heap),
// and gathers stored rows into output columns.
package rowstore
