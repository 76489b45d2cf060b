package stats

import (
	"time"

	"github.com/listings-dev/listings"
)

// Resample keeps, of time-ordered stored rows (by AsOf), the last row in each
// every-long bucket, for `history --every`. Buckets are aligned to the Unix
// epoch in UTC (with every = 24h a bucket is a UTC day). Rows of different
// (gpu, kind, currency) are bucketed separately, so a mixed history keeps
// one point per row key and bucket. The kept rows stay in input order.
// every <= 0 keeps all rows.
func Resample(rows []listings.Row, every time.Duration) []listings.Row {
	if every <= 0 {
		return rows
	}
	type slot struct {
		key    string
		bucket int64
	}
	last := make(map[slot]int, len(rows))
	for i := range rows {
		r := &rows[i]
		last[slot{listings.RowKey(r.GPU, r.Kind, r.Currency), floorDiv(r.AsOf.UnixNano(), int64(every))}] = i
	}
	out := make([]listings.Row, 0, len(last))
	for i := range rows {
		r := &rows[i]
		if last[slot{listings.RowKey(r.GPU, r.Kind, r.Currency), floorDiv(r.AsOf.UnixNano(), int64(every))}] == i {
			out = append(out, *r)
		}
	}
	return out
}

// floorDiv is ⌊a/b⌋ for b > 0, also for negative a (times before 1970).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
