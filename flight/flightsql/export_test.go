package flightsql

// SetTestHookRun sets the hook called with the pinned checkpoints before
// a query runs (nil: none).
func SetTestHookRun(f func(pinned []uint64)) { testHookRun = f }
