package stats

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/listings-dev/listings"
)

// Percentile returns the type-7 percentile (linear interpolation between
// closest ranks; R's default, numpy's "linear") of sorted, which must be in
// ascending order. q is a fraction in [0,1]; values outside are clamped and
// NaN counts as 0. q is taken as the shortest decimal that prints as it (at
// most 18 decimals), so 0.1 is exactly one tenth, and the result is exact
// integer arithmetic rounded to the nearest micro-unit, halves away from
// zero. An empty slice gives 0.
func Percentile(sorted []listings.Price, q float64) listings.Price {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	num, den := decimalFraction(q)
	// h = (n-1)·num/den; idx = ⌊h⌋ and rem/den its fractional part.
	hi, lo := bits.Mul64(uint64(n-1), num)
	idx, rem := bits.Div64(hi, lo, den)
	if rem == 0 {
		return sorted[idx]
	}
	return interpolate(sorted[idx], sorted[idx+1], rem, den)
}

// Median returns the middle value of sorted (ascending); with an even count,
// the mean of the two middle values rounded to the nearest micro-unit, halves
// away from zero. An empty slice gives 0.
func Median(sorted []listings.Price) listings.Price {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return sorted[n/2]
	}
	return interpolate(sorted[n/2-1], sorted[n/2], 1, 2)
}

// decimalFraction writes q, clamped to [0,1], as num/den with den a power of
// ten (at most 1e18) and num <= den.
func decimalFraction(q float64) (num, den uint64) {
	switch {
	case !(q > 0): // also NaN
		return 0, 1
	case q >= 1:
		return 1, 1
	}
	s := strconv.FormatFloat(q, 'f', -1, 64)
	if len(s) > 2+18 {
		s = strconv.FormatFloat(q, 'f', 18, 64)
	}
	// s is "0.ddd…": q < 1 and at most 18 decimals cannot round up to 1.
	digits := strings.TrimRight(s[2:], "0")
	if digits == "" {
		return 0, 1
	}
	num, _ = strconv.ParseUint(digits, 10, 64)
	den = 1
	for range digits {
		den *= 10
	}
	return num, den
}

// interpolate returns a + (b-a)·num/den for a <= b and num < den, rounded to
// the nearest micro-unit, halves away from zero. It cannot overflow: the
// difference is taken in uint64 and the product in 128 bits.
func interpolate(a, b listings.Price, num, den uint64) listings.Price {
	diff := uint64(b) - uint64(a)
	hi, lo := bits.Mul64(diff, num)
	q, r := bits.Div64(hi, lo, den) // hi < den because num < den
	v := listings.Price(uint64(a) + q)
	switch {
	case r > den-r:
		v++
	case r == den-r && v >= 0: // exactly half: away from zero
		v++
	}
	return v
}
