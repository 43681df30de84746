// Package stateio is "state as data": tools that read checkpoints
// (docs/state-format.md) and print, export and compare their state rows
// without running a job. The clink commands state-cat, state-export and
// state-diff are thin wrappers around it; state-query reads the same parts
// through the 'checkpoint' connector.
//
// Every function reads a checkpoint through the checkpoint package, so a
// missing, incomplete or corrupt checkpoint is a *checkpoint.FileError
// naming the file. Output is deterministic: parts in manifest order
// (operator, then subtask), rows in file order.
package stateio
