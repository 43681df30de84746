package arrowcol

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// AppendDecimal is decimal128.Num.ToString without its allocations.
func TestAppendDecimalMatchesToString(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []decimal128.Num{
		decimal128.FromI64(0), decimal128.FromI64(1), decimal128.FromI64(-1), decimal128.FromI64(-700),
		decimal128.FromI64(math.MaxInt64), decimal128.FromI64(math.MinInt64),
		decimal128.FromU64(math.MaxUint64), decimal128.New(-1, 0), decimal128.New(-2, math.MaxUint64),
		decimal128.MaxDecimal128, decimal128.MaxDecimal128.Negate(),
	}
	for range 2000 {
		switch r.IntN(3) {
		case 0:
			vals = append(vals, decimal128.FromI64(r.Int64N(2000)-1000))
		case 1:
			vals = append(vals, decimal128.FromI64(int64(r.Uint64())))
		default:
			vals = append(vals, decimal128.New(int64(r.Uint64()), r.Uint64()))
		}
	}
	for _, v := range vals {
		for scale := int32(0); scale <= 38; scale++ {
			if got, want := string(AppendDecimal([]byte("x"), v, scale)), "x"+v.ToString(scale); got != want {
				t.Fatalf("%v at scale %d: got %s, want %s", v, scale, got, want)
			}
		}
	}
	dst := make([]byte, 0, 64)
	for _, v := range []decimal128.Num{decimal128.FromI64(-123456789), decimal128.MaxDecimal128.Negate()} {
		if allocs := testing.AllocsPerRun(100, func() { dst = AppendDecimal(dst[:0], v, 4) }); allocs != 0 {
			t.Errorf("%v: %v allocations per decimal", v, allocs)
		}
	}
}
