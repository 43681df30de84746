//go:build !lake && !iceberg

package main

// This build links no lake connector; a job that needs them re-runs in
// clink-lake or clink-iceberg.
const lakeLinked, icebergLinked = false, false
