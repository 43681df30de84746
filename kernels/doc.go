// Package kernels is pure compute on Arrow arrays. This package holds the
// expression evaluator: scalar functions and casts evaluated column at a
// time under selection vectors (expr*.go, scalar_*.go, cast*.go, decimal
// arithmetic in decimal.go). A function's SQL name and arity (Registry)
// are separate from its typed kernels; registries are built by explicit
// Register calls, and the binder dispatches on them.
//
// The other kernels are split by concept into sub-packages: hash (key
// hashing and the group-by hash table), agg (aggregate accumulators),
// window (window definitions and their alignment), rowstore (retained
// input rows of joins and Top-N) and column (small column helpers they
// share). Nothing under kernels imports an operator, the engine or the
// checkpoint format: the stateful operators (engine/op/...) write
// accumulators and keys into checkpoint parts from the plain columns these
// packages expose.
package kernels
