package listings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Price is an amount of money per GPU-hour in integer micro-units (1e-6) of
// its currency. Prices are never stored as floats: floats appear only at the
// edges (parsing a source's JSON numbers, printing). A Price marshals to JSON
// as an exact decimal number with up to six decimals.
type Price int64

// Micro is the number of micro-units in one unit of currency.
const Micro = 1_000_000

// PriceFromFloat rounds f (units of currency) to the nearest micro-unit.
// It fails on NaN, infinities and values that do not fit an int64.
func PriceFromFloat(f float64) (Price, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("price %v is not a number", f)
	}
	m := math.Round(f * Micro)
	if m > math.MaxInt64/2 || m < math.MinInt64/2 {
		return 0, fmt.Errorf("price %v out of range", f)
	}
	return Price(m), nil
}

// ParsePrice reads a plain decimal ("2.5", "3", "-1.25", "$2.50") exactly,
// without going through a float. More than six decimals are rounded half away
// from zero.
func ParsePrice(s string) (Price, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "$")
	if t == "" {
		return 0, errors.New("empty price")
	}
	neg := false
	switch t[0] {
	case '-':
		neg = true
		t = t[1:]
	case '+':
		t = t[1:]
	}
	intPart, frac, _ := strings.Cut(t, ".")
	if intPart == "" && frac == "" {
		return 0, fmt.Errorf("price %q: no digits", s)
	}
	for _, part := range []string{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("price %q: not a plain decimal", s)
			}
		}
	}
	if len(intPart) > 12 {
		return 0, fmt.Errorf("price %q out of range", s)
	}
	var whole int64
	if intPart != "" {
		whole, _ = strconv.ParseInt(intPart, 10, 64)
	}
	round := false
	if len(frac) > 6 {
		round = frac[6] >= '5'
		frac = frac[:6]
	}
	frac += strings.Repeat("0", 6-len(frac))
	f, _ := strconv.ParseInt(frac, 10, 64)
	v := whole*Micro + f
	if round {
		v++
	}
	if neg {
		v = -v
	}
	return Price(v), nil
}

// Float returns p in units of currency; for output and arithmetic at the
// edges only.
func (p Price) Float() float64 { return float64(p) / Micro }

// String formats p as a plain decimal with six decimals ("0.422186").
func (p Price) String() string {
	neg := p < 0
	v := int64(p)
	if neg {
		v = -v
	}
	s := fmt.Sprintf("%d.%06d", v/Micro, v%Micro)
	if neg {
		s = "-" + s
	}
	return s
}

// Decimal formats p with trailing zeros trimmed but at least two decimals
// ("2.50", "0.422186", "3.00").
func (p Price) Decimal() string {
	s := p.String()
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); len(s)-i-1 < 2 {
		s += strings.Repeat("0", 2-(len(s)-i-1))
	}
	return s
}

// MarshalJSON writes p as an exact decimal number.
func (p Price) MarshalJSON() ([]byte, error) { return []byte(p.Decimal()), nil }

// UnmarshalJSON reads an exact decimal number (or a quoted one).
func (p *Price) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("price %s: %w", b, err)
		}
		v, err := PriceFromFloat(f)
		*p = v
		return err
	}
	v, err := ParsePrice(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MulDiv returns p*num/den rounded to the nearest micro-unit, without
// overflow for realistic prices. It is how whole-machine prices become
// per-GPU prices and monthly prices hourly ones.
func (p Price) MulDiv(num, den int64) Price {
	if den == 0 {
		return 0
	}
	x := int64(p) * num
	q, r := x/den, x%den
	if 2*abs64(r) >= abs64(den) {
		if (x < 0) != (den < 0) {
			q--
		} else {
			q++
		}
	}
	return Price(q)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// HoursPerMonth is the number of hours a monthly price is spread over
// (365 × 24 / 12), the usual convention of hosting providers.
const HoursPerMonth = 730

// Round rounds p to the given number of decimals (0..6), half away from
// zero: Price(933340).Round(4) is 0.9333, for display of amounts of money.
func (p Price) Round(decimals int) Price {
	if decimals >= 6 || decimals < 0 {
		return p
	}
	unit := int64(1)
	for i := decimals; i < 6; i++ {
		unit *= 10
	}
	return Price(1).MulDiv(int64(p.MulDiv(1, unit)), 1) * Price(unit)
}
