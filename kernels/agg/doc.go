// Package agg holds the typed aggregate accumulators (COUNT, SUM, AVG,
// MIN, MAX, COUNT(DISTINCT)) as columns indexed by group id: the window
// aggregate's per-column states (Plan, State), and the unwindowed
// aggregate's accumulators over an insert-only input (InsertAcc) or a
// changelog (RetractAcc). Every accumulator describes its state as plain
// typed columns (StateFields, StateColumns, SetState), which the operators
// write into checkpoints.
package agg
