//go:build race

package kernels

// raceEnabled shortens the single-goroutine randomized tests under the
// race detector, which slows them tenfold and checks nothing there.
const raceEnabled = true
