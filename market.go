package listings

import (
	"sort"
	"time"
)

// Snapshot is the market at one instant (DESIGN §4): for each source its
// latest ok run started at or before AsOf, if no older than the maximum age;
// the available listings present in those runs; and the floor listings that
// disappeared in the window before AsOf. The index builds it; stats/ turns it
// into rows.
type Snapshot struct {
	AsOf    time.Time
	MaxAge  time.Duration
	Runs    map[string]Run // source -> the run its listings come from (fresh sources only)
	Stale   []Run          // latest ok runs older than MaxAge: they contribute nothing
	Present []Presence     // available listings of the fresh runs (filtered by GPU/kind when asked)
	// Gone holds floor listings (FloorAt set) that disappeared with
	// AsOf − window ≤ GoneAt ≤ AsOf.
	Gone []Gone
	// LastListed gives, per row key (RowKey), the latest ok run at or before
	// AsOf whose market had listings of that row, so a row that is not live
	// can still say how old its last price is.
	LastListed map[string]time.Time
}

// RowKey identifies a statistics row: GPU, kind and currency.
func RowKey(gpu string, kind Kind, currency string) string {
	return gpu + "\x00" + string(kind) + "\x00" + currency
}

// Row is the statistics of one (GPU, kind, currency) in a market snapshot
// (DESIGN §4). Prices are per GPU-hour in Currency (USD unless a listing's
// currency had no configured rate). Price fields are meaningful only when
// Listings > 0.
type Row struct {
	GPU          string      `json:"gpu"`
	Kind         Kind        `json:"kind"`
	Currency     string      `json:"currency"`
	AsOf         time.Time   `json:"as_of"`
	Live         bool        `json:"live"`
	Listings     int         `json:"listings"`
	Median       Price       `json:"median"`
	P10          Price       `json:"p10"`
	P25          Price       `json:"p25"`
	P75          Price       `json:"p75"`
	P90          Price       `json:"p90"`
	Floor        Price       `json:"floor"`
	DurableFloor *Price      `json:"durable_floor"` // nil: no listing has lasted min_life yet
	Disappearing int         `json:"disappearing"`  // disappearing floor listings gone in the last 7 days
	Unconfirmed  int         `json:"unconfirmed"`   // floor listings present but younger than min_life
	LastOKRun    time.Time   `json:"last_ok_run"`   // latest ok run with listings of this row (zero: never)
	Sources      []SourceRow `json:"sources"`
}

// SourceRow is one source's part of a row.
type SourceRow struct {
	Source    string    `json:"source"`
	Listings  int       `json:"listings"`
	Median    Price     `json:"median"`
	LastOKRun time.Time `json:"last_ok_run"`
}

// FreshRuns splits the latest ok run of each source (at or before asOf)
// into fresh ones, no older than maxAge at asOf, and stale ones. Runs that
// started after asOf are ignored. A maxAge of zero or less means no limit.
func FreshRuns(latest []Run, asOf time.Time, maxAge time.Duration) (fresh, stale []Run) {
	for _, r := range latest {
		switch {
		case r.Status != RunOK || r.Started.After(asOf):
		case maxAge > 0 && asOf.Sub(r.Started) > maxAge:
			stale = append(stale, r)
		default:
			fresh = append(fresh, r)
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Source < fresh[j].Source })
	sort.Slice(stale, func(i, j int) bool { return stale[i].Source < stale[j].Source })
	return fresh, stale
}

// Defaults of the statistics (DESIGN §4); each is a flag or config key.
const (
	DefaultMaxAge  = 36 * time.Hour
	DefaultMinLife = 24 * time.Hour
	FlagWindow     = 7 * 24 * time.Hour
)
