//go:build !lake

package main

// lakeLinked: this build does not link the lake connectors; a job that
// needs them re-runs in clink-lake.
const lakeLinked = false
