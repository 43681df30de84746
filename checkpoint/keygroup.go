package checkpoint

import "fmt"

// KeyGroupOf maps a key's hash to its key group: hash mod maxParallelism.
// The hash is the engine's key hash; it is part of the format's contract,
// since records routed after a restore must land in the key group that
// holds their state.
func KeyGroupOf(hash uint64, maxParallelism int) int32 {
	return int32(hash % uint64(maxParallelism))
}

// KeyGroupRange is the contiguous range [first, last] of key groups that
// subtask owns when an operator runs with the given parallelism (Flink's
// assignment). Ranges of subtasks 0..parallelism-1 are disjoint and cover
// [0, maxParallelism); a range is empty (first > last) only when
// parallelism > maxParallelism, which the planner rejects.
func KeyGroupRange(maxParallelism, parallelism, subtask int) (first, last int32) {
	if maxParallelism < 1 || parallelism < 1 || subtask < 0 || subtask >= parallelism {
		panic(fmt.Sprintf("checkpoint.KeyGroupRange(%d, %d, %d): bad arguments", maxParallelism, parallelism, subtask))
	}
	m, p, i := int64(maxParallelism), int64(parallelism), int64(subtask)
	return int32((i*m + p - 1) / p), int32(((i+1)*m - 1) / p)
}

// KeyGroupOwner is the subtask whose KeyGroupRange holds keyGroup.
func KeyGroupOwner(maxParallelism, parallelism int, keyGroup int32) int {
	return int(int64(keyGroup) * int64(parallelism) / int64(maxParallelism))
}
