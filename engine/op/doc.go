// Package op is the streaming operator contract: the one interface every
// operator implements (Operator, or BinaryOperator for two inputs) and the
// small optional ones found by type assertion (WatermarkHandler, Finisher,
// Closer, StatsReporter, Keyed, and Stateful with its Snapshot and
// Restore), plus the thin stateless operators (Filter, Project, Rename,
// Union). The stateful operators live one per package below it (window,
// groupagg, join, topn), each one type owning its state, its snapshot and
// its restore; opstate holds the state-format helpers they share. The
// engine runs operators and never appears among their imports.
package op
