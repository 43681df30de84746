// Package optest is the test harness the operator packages share: random
// inputs over a fixed schema (Case, Row, Event) with their batches at any
// size and selection, output rendering and comparison, a cheap leak-checking
// allocator, and a checkpoint round trip of an operator's state.
package optest
