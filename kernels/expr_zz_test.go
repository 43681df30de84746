package kernels

import (
	"encoding/binary"
	"math/rand"
	"testing"
	"unsafe"
)

var zzSink []uint64

func zzData() []float64 {
	r := rand.New(rand.NewSource(1))
	x := make([]float64, 8192)
	for i := range x {
		x[i] = r.Float64() * 100
	}
	return x
}

func BenchmarkZZ(b *testing.B) {
	x := zzData()
	out := make([]uint64, 128)
	b.Run("cur", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for w := range out {
				out[w] = scCmpWordVS(cmpGt, x[w*64:w*64+64], 50.0)
			}
			zzSink = out
		}
	})
	b.Run("shift1", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for w := range out {
				v := x[w*64 : w*64+64]
				var word uint64
				for j := 63; j >= 0; j-- {
					word = word<<1 | scBit(v[j] > 50)
				}
				out[w] = word
			}
			zzSink = out
		}
	})
	b.Run("bytes8", func(b *testing.B) {
		ob := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 1024)
		for i := 0; i < b.N; i++ {
			for k := range ob {
				v := x[k*8 : k*8+8 : k*8+8]
				ob[k] = byte(scBit(v[0] > 50) | scBit(v[1] > 50)<<1 | scBit(v[2] > 50)<<2 | scBit(v[3] > 50)<<3 |
					scBit(v[4] > 50)<<4 | scBit(v[5] > 50)<<5 | scBit(v[6] > 50)<<6 | scBit(v[7] > 50)<<7)
			}
			zzSink = out
		}
	})
	b.Run("boolpack", func(b *testing.B) {
		var tmp [64]bool
		for i := 0; i < b.N; i++ {
			for w := range out {
				v := x[w*64 : w*64+64]
				for j := range tmp {
					tmp[j] = v[j] > 50
				}
				tb := unsafe.Slice((*byte)(unsafe.Pointer(&tmp[0])), 64)
				var word uint64
				for k := 0; k < 8; k++ {
					word |= (binary.LittleEndian.Uint64(tb[k*8:]) * 0x0102040810204080 >> 56) << (8 * k)
				}
				out[w] = word
			}
			zzSink = out
		}
	})
}

func TestZZPack(t *testing.T) {
	x := zzData()
	var tmp [64]bool
	for w := 0; w < 128; w++ {
		v := x[w*64 : w*64+64]
		for j := range tmp {
			tmp[j] = v[j] > 50
		}
		tb := unsafe.Slice((*byte)(unsafe.Pointer(&tmp[0])), 64)
		var word uint64
		for k := 0; k < 8; k++ {
			word |= (binary.LittleEndian.Uint64(tb[k*8:]) * 0x0102040810204080 >> 56) << (8 * k)
		}
		if want := scCmpWordVS(cmpGt, v, 50.0); word != want {
			t.Fatalf("%x != %x", word, want)
		}
	}
}
