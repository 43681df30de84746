//go:build !race

package optest

const RaceEnabled = false
