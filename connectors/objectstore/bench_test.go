package objectstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// BenchmarkStore times what a sink does with a store, through the bucket
// interface on the real servers: upload a staged file (Create, Write,
// Commit) and publish one (Move: server-side copy, delete), at two sizes.
// The MB/s of upload is the store client's throughput on 127.0.0.1 (the
// server shares the machine); client-cpu-ms/op is the CPU time of this
// process alone (the client, not the server, which runs in a child).
func BenchmarkStore(b *testing.B) {
	for _, st := range []struct {
		name  string
		start func(testing.TB) *ostest.Server
		open  func(connectors.Options, string) (bucket, error)
	}{
		{"s3", ostest.MinIO, newS3},
		{"gcs", ostest.FakeGCS, newGCS},
		{"azure", ostest.Azurite, newAzure},
	} {
		b.Run("store="+st.name, func(b *testing.B) {
			s := st.start(b)
			ctx := context.Background()
			if err := s.Client.CreateBucket(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
			bk, err := st.open(connectors.Options(s.Options), "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer bk.Close()
			for _, size := range []int{4 << 20, 64 << 20} {
				data := make([]byte, size)
				rand.NewChaCha8([32]byte{byte(size >> 20)}).Read(data)
				put := func(key string) {
					up, err := bk.Create(ctx, key)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := up.Write(data); err != nil {
						b.Fatal(err)
					}
					if err := up.Commit(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.Run(fmt.Sprintf("op=upload,size=%dMiB", size>>20), func(b *testing.B) {
					b.SetBytes(int64(size))
					cpu := cpuTime()
					for i := 0; b.Loop(); i++ {
						put(fmt.Sprintf("up/%d-%d", size, i))
					}
					b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "client-cpu-ms/op")
				})
				b.Run(fmt.Sprintf("op=publish,size=%dMiB", size>>20), func(b *testing.B) {
					for i := 0; b.Loop(); i++ {
						b.StopTimer()
						put(fmt.Sprintf("stage/%d-%d", size, i))
						b.StartTimer()
						if err := bk.Move(ctx, fmt.Sprintf("stage/%d-%d", size, i), fmt.Sprintf("pub/%d-%d", size, i)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
