// Package rowstore retains input rows for operators that emit them later
// (Top-N): a Store keeps the batches rows came in and indexes rows
// by key (linked lists of int32s), and gathers stored rows into output
// columns. (The join keeps its rows column-wise: engine/op/join.)
package rowstore
