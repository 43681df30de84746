package kafka

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordPool recycles franz-go's record slices and decompression buffers:
// the source copies every value into Arrow buffers and recycles the
// records at once, so the garbage collector does not have to chase a
// pointer-rich slice per fetched batch.
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
