package kafka

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordPool recycles franz-go's record slices and decompression buffers:
// the source copies every value into Arrow buffers and recycles the
// records at once, so the garbage collector does not have to chase a
// pointer-rich slice per fetched batch.
//
// These are all the buffers franz-go (v1.22) lets a client reuse. The
// fetch response itself is read into a fresh make([]byte, size) per
// response (brokerCxn.readSizeAndBody), with no pool interface, Dialer or
// hook in between; records of an uncompressed batch alias that buffer, so
// it lives until their last Recycle and then goes to the garbage collector
// (about a tenth of the CPU of q0 via Kafka: zeroing it and its page
// faults). Fetch sizes do not change that cost per byte: with one
// partition, 64 KiB to 1 MiB per fetch measured the same or worse than
// 128 KiB (larger responses no longer stay in the L2 cache across the
// socket copy, the CRC check, record parsing and decoding). Only a
// compressed topic reads records from a pooled buffer (GetDecompressBytes).
type recordPool struct {
	recs sync.Pool // *[]kgo.Record
	bufs sync.Pool // *[]byte
}

var (
	_ kgo.PoolRecords         = (*recordPool)(nil)
	_ kgo.PoolDecompressBytes = (*recordPool)(nil)
)

func (p *recordPool) GetRecords(n int) []kgo.Record {
	if v, ok := p.recs.Get().(*[]kgo.Record); ok && cap(*v) >= n {
		return (*v)[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (p *recordPool) PutRecords(r []kgo.Record) { p.recs.Put(&r) }

func (p *recordPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	if v, ok := p.bufs.Get().(*[]byte); ok && cap(*v) >= 2*len(compressed) {
		return (*v)[:0]
	}
	return make([]byte, 0, 4*len(compressed))
}

func (p *recordPool) PutDecompressBytes(b []byte) { p.bufs.Put(&b) }
