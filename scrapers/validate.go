package scrapers

import (
	"fmt"
	"math"

	"github.com/listings-dev/listings"
)

// DefaultPriceCap is the sanity cap of DESIGN §7: a per-GPU-hour price above
// it is rejected as absurd. It is a bound on bad data, not a price used for
// anything.
const DefaultPriceCap = listings.Price(1000 * listings.Micro)

// CheckPrice turns a per-GPU-hour price read from a source into a Price, or
// says why the row must be rejected (one of the listings.Reject* reasons).
func CheckPrice(v float64, limit listings.Price) (listings.Price, string) {
	if limit <= 0 {
		limit = DefaultPriceCap
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, listings.RejectBadPrice
	case v < 0:
		return 0, listings.RejectNegative
	case v == 0:
		return 0, listings.RejectZeroPrice
	}
	p, err := listings.PriceFromFloat(v)
	switch {
	case err != nil:
		return 0, listings.RejectBadPrice
	case p > limit:
		return 0, listings.RejectAboveCap
	case p == 0: // below half a micro-unit: not a real price
		return 0, listings.RejectZeroPrice
	}
	return p, ""
}

// Batch accumulates one response's listings and rejects with the rules every
// source shares: duplicate (id, kind) pairs keep the first and reject the
// later ones; unknown GPU names are kept and counted.
type Batch struct {
	Source   string
	Listings []listings.Listing
	Rejects  []listings.Reject
	seen     map[string]bool
}

// NewBatch starts a batch for source.
func NewBatch(source string) *Batch {
	return &Batch{Source: source, seen: map[string]bool{}}
}

// Add keeps l unless its (id, kind) was already added, in which case the
// row is rejected as a duplicate. It fills l.Source and, when empty,
// l.Currency (USD).
func (b *Batch) Add(l listings.Listing) {
	l.Source = b.Source
	if l.Currency == "" {
		l.Currency = listings.USD
	}
	if l.ID == "" {
		b.Reject("", listings.RejectNoID, l.RawGPU)
		return
	}
	if b.seen[l.Key()] {
		b.Reject(l.ID, listings.RejectDuplicateID, string(l.Kind))
		return
	}
	b.seen[l.Key()] = true
	b.Listings = append(b.Listings, l)
}

// Reject records a rejected row.
func (b *Batch) Reject(id, reason, detail string) {
	b.Rejects = append(b.Rejects, listings.Reject{ID: id, Reason: reason, Detail: detail})
}

// Rejectf records a rejected row with a formatted detail.
func (b *Batch) Rejectf(id, reason, format string, args ...any) {
	b.Reject(id, reason, fmt.Sprintf(format, args...))
}

// Result returns the batch as a collection result.
func (b *Batch) Result() *Result {
	return &Result{Listings: b.Listings, Rejects: b.Rejects}
}
