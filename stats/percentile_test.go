package stats

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/listings-dev/listings"
)

// P parses a decimal price for test tables; it panics on a typo.
func P(s string) listings.Price {
	v, err := listings.ParsePrice(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Ps parses several decimal prices.
func Ps(ss ...string) []listings.Price {
	out := make([]listings.Price, len(ss))
	for i, s := range ss {
		out[i] = P(s)
	}
	return out
}

func TestPercentileType7(t *testing.T) {
	micro := func(v ...int64) []listings.Price {
		out := make([]listings.Price, len(v))
		for i, x := range v {
			out[i] = listings.Price(x)
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []listings.Price
		q      float64
		want   listings.Price
	}{
		{"1..4 p10", Ps("1", "2", "3", "4"), 0.10, P("1.3")},
		{"1..4 p25", Ps("1", "2", "3", "4"), 0.25, P("1.75")},
		{"1..4 p50", Ps("1", "2", "3", "4"), 0.50, P("2.5")},
		{"1..4 p75", Ps("1", "2", "3", "4"), 0.75, P("3.25")},
		{"1..4 p90", Ps("1", "2", "3", "4"), 0.90, P("3.7")},
		{"1..4 p0 is min", Ps("1", "2", "3", "4"), 0, P("1")},
		{"1..4 p100 is max", Ps("1", "2", "3", "4"), 1, P("4")},
		{"one element p10", Ps("0.42"), 0.10, P("0.42")},
		{"one element p90", Ps("0.42"), 0.90, P("0.42")},
		{"two elements p10", Ps("1", "2"), 0.10, P("1.1")},
		{"two elements p50", Ps("1", "2"), 0.50, P("1.5")},
		{"two elements p90", Ps("1", "2"), 0.90, P("1.9")},
		{"five elements p90 on a rank", Ps("0.1", "0.2", "0.3", "0.4", "0.5"), 0.75, P("0.4")},
		{"eleven elements p10 on a rank", Ps("0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0", "1.1"), 0.10, P("0.2")},
		{"ties", Ps("0.3", "0.3", "0.3", "0.9"), 0.25, P("0.3")},
		// Rounding to the micro-unit, halves away from zero.
		{"quarter micro rounds down", micro(0, 1), 0.25, 0},
		{"half micro rounds up", micro(0, 1), 0.50, 1},
		{"three quarters rounds up", micro(0, 1), 0.75, 1},
		{"negative half rounds away from zero", micro(-1, 0), 0.50, -1},
		{"1.5 micro rounds to 2", micro(0, 3), 0.50, 2},
		// q is read as its decimal: 0.3 of 5µ is exactly 1.5µ → 2µ, where
		// float64 arithmetic gives 1.4999999999999998 and would round down.
		{"q read as decimal", micro(0, 5), 0.3, 2},
		{"empty", nil, 0.5, 0},
		{"q below 0 clamps", Ps("1", "2"), -0.5, P("1")},
		{"q above 1 clamps", Ps("1", "2"), 1.5, P("2")},
		{"NaN counts as 0", Ps("1", "2"), math.NaN(), P("1")},
		{"huge range does not overflow", micro(math.MinInt64, math.MaxInt64), 0.5, -1}, // mean -0.5µ, away from zero
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name   string
		sorted []listings.Price
		want   listings.Price
	}{
		{"empty", nil, 0},
		{"one", Ps("0.5"), P("0.5")},
		{"odd takes the middle", Ps("0.1", "0.2", "0.9"), P("0.2")},
		{"even takes the mean of the middle two", Ps("0.1", "0.2", "0.4", "0.9"), P("0.3")},
		{"even mean rounds half up to the micro", []listings.Price{1, 2}, 2},
		{"even mean of negatives rounds away from zero", []listings.Price{-2, -1}, -2},
		{"even mean exact", Ps("0.422186", "0.422188"), P("0.422187")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Median(tt.sorted); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.sorted, got, tt.want)
			}
		})
	}
}

// refPercentile is type 7 in exact rational arithmetic with q = k/1000.
func refPercentile(sorted []listings.Price, k int64) listings.Price {
	n := int64(len(sorted))
	h := new(big.Rat).SetFrac64((n-1)*k, 1000)
	lo := new(big.Int).Quo(h.Num(), h.Denom()).Int64()
	frac := new(big.Rat).Sub(h, new(big.Rat).SetInt64(lo))
	v := new(big.Rat).SetInt64(int64(sorted[lo]))
	if frac.Sign() != 0 {
		d := new(big.Rat).SetInt64(int64(sorted[lo+1] - sorted[lo]))
		v.Add(v, d.Mul(d, frac))
	}
	// Round half away from zero.
	num, den := v.Num(), v.Denom()
	twice := new(big.Int).Mul(num, big.NewInt(2))
	twice.Add(twice, new(big.Int).Mul(den, big.NewInt(int64(num.Sign()))))
	q := new(big.Int).Quo(twice, new(big.Int).Mul(den, big.NewInt(2)))
	return listings.Price(q.Int64())
}

func TestPercentileMatchesExactReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + r.IntN(40)
		xs := make([]listings.Price, n)
		for i := range xs {
			xs[i] = listings.Price(r.Int64N(5_000_000) - 1_000_000)
		}
		slices.Sort(xs)
		k := r.Int64N(1001)
		q := float64(k) / 1000
		if got, want := Percentile(xs, q), refPercentile(xs, k); got != want {
			t.Fatalf("trial %d: Percentile(%v, %v) = %v, want %v", trial, xs, q, got, want)
		}
	}
}

// checkPercentileProperties asserts that Percentile stays within [min, max],
// is monotone in q, and agrees with Median at q = 0.5.
func checkPercentileProperties(t *testing.T, xs []listings.Price, q1, q2 float64) {
	t.Helper()
	if len(xs) == 0 {
		return
	}
	slices.Sort(xs)
	if q1 > q2 {
		q1, q2 = q2, q1
	}
	a, b := Percentile(xs, q1), Percentile(xs, q2)
	lo, hi := xs[0], xs[len(xs)-1]
	for _, v := range []listings.Price{a, b} {
		if v < lo || v > hi {
			t.Fatalf("Percentile out of [%v, %v]: got %v (q1=%v q2=%v xs=%v)", lo, hi, v, q1, q2, xs)
		}
	}
	if !math.IsNaN(q1) && !math.IsNaN(q2) && a > b {
		t.Fatalf("Percentile not monotone: q=%v gives %v > q=%v gives %v (xs=%v)", q1, a, q2, b, xs)
	}
	if got, want := Percentile(xs, 0.5), Median(xs); got != want {
		t.Fatalf("Percentile(xs, 0.5) = %v, want Median %v (xs=%v)", got, want, xs)
	}
}

func FuzzPercentile(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.1, 0.9)
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 127, 0, 0, 0, 0, 0, 0, 0, 128}, 0.3, 0.30000000000000004)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, -1.0, 2.0)
	f.Fuzz(func(t *testing.T, data []byte, q1, q2 float64) {
		var xs []listings.Price
		for len(data) >= 8 {
			var v uint64
			for _, c := range data[:8] {
				v = v<<8 | uint64(c)
			}
			xs = append(xs, listings.Price(int64(v)))
			data = data[8:]
		}
		checkPercentileProperties(t, xs, q1, q2)
	})
}

func TestPercentileProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		xs := make([]listings.Price, 1+r.IntN(50))
		for i := range xs {
			xs[i] = listings.Price(r.Int64N(2_000_000_000))
		}
		checkPercentileProperties(t, xs, r.Float64(), r.Float64())
	}
}
