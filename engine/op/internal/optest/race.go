//go:build race

package optest

// RaceEnabled shortens the single-goroutine randomized tests under the
// race detector, which slows them tenfold and checks nothing there.
const RaceEnabled = true
