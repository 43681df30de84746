// Package join is the streaming equi-join (Join): regular joins, whose
// sides keep every row, and interval joins (Config.Interval; window joins
// are planned as interval joins over the window bounds), whose state the
// watermark expires. It owns its state and writes it in the state format's
// join_left, join_right and operator slots.
//
// A side's rows are stored column by column in fixed-size chunks
// (chunks.go, store.go): the join copies the values of the rows it keeps
// out of their input batch and retains no batch, and expiry and
// compaction free or reuse the chunks and string blocks of dropped rows.
package join
