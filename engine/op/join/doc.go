// Package join is the streaming equi-join (Join): regular joins, whose
// sides keep every row, and interval joins (Config.Interval; window joins
// are planned as interval joins over the window bounds), whose state the
// watermark expires. It owns its state and writes it in the state format's
// join_left, join_right and operator slots.
package join
