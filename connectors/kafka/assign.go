package kafka

// Assign returns the partitions of a topic with n partitions that subtask
// reads at the given parallelism: those whose index mod parallelism is
// subtask, in increasing order. The assignment depends on nothing else (no
// group protocol, no broker), so every restart and every subtask agree on
// it. A parallelism below 1 counts as 1.
func Assign(n int32, subtask, parallelism int) []int32 {
	if parallelism < 1 {
		parallelism = 1
	}
	if subtask < 0 || subtask >= parallelism {
		return nil
	}
	var out []int32
	for p := int32(subtask); p < n; p += int32(parallelism) {
		out = append(out, p)
	}
	return out
}
