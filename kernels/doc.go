// Package kernels is pure compute on Arrow arrays: scalar functions and
// casts evaluated column at a time under selection vectors (expr*.go,
// scalar_*.go, cast.go), key hashing and the group-by hash table
// (hashtable*.go), typed aggregate accumulators (agg_*.go), and window
// assignment with the grouped window aggregate (window*.go). A function's
// SQL name and arity (Registry) are separate from its typed kernels;
// registries are built by explicit Register calls. Package op builds the
// streaming operators from these kernels.
package kernels
