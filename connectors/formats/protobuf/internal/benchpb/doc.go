// Package benchpb holds the Go code protoc-gen-go generates for
// bench.proto, the baseline of the protobuf format's benchmarks
// (proto.Unmarshal into a generated struct). It is generated without
// protoc by ./gen, which compiles bench.proto with protocompile and runs
// protoc-gen-go's generator in-process (package pbgen);
// TestGeneratedCurrent fails when bench.pb.go is stale.
package benchpb

//go:generate go run ./gen
