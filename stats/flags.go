package stats

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/listings-dev/listings"
)

// Flag statuses.
const (
	Disappeared = "disappeared"
	Unconfirmed = "unconfirmed"
)

// Flag is one disappearing floor listing (status "disappeared") or one floor
// listing still present but younger than min_life ("unconfirmed"). Price is
// in USD when the run's FX rates convert it, else in Currency.
type Flag struct {
	Source    string
	ID        string
	GPU       string
	Kind      listings.Kind
	Price     listings.Price
	Currency  string
	FirstSeen time.Time
	LastSeen  time.Time
	GoneAt    *time.Time // nil for unconfirmed flags
	Lifetime  time.Duration
	Status    string // "disappeared" or "unconfirmed"
}

// MarshalJSON writes the fields of DESIGN §6 (`flags --json`) in snake_case,
// times in RFC 3339 UTC and the lifetime in whole seconds as lifetime_s.
func (f Flag) MarshalJSON() ([]byte, error) {
	var gone *time.Time
	if f.GoneAt != nil {
		t := f.GoneAt.UTC()
		gone = &t
	}
	return json.Marshal(struct {
		Source    string         `json:"source"`
		ID        string         `json:"id"`
		GPU       string         `json:"gpu"`
		Kind      listings.Kind  `json:"kind"`
		Price     listings.Price `json:"price"`
		Currency  string         `json:"currency"`
		FirstSeen time.Time      `json:"first_seen"`
		LastSeen  time.Time      `json:"last_seen"`
		GoneAt    *time.Time     `json:"gone_at"`
		Lifetime  int64          `json:"lifetime_s"`
		Status    string         `json:"status"`
	}{f.Source, f.ID, f.GPU, f.Kind, f.Price, f.Currency, f.FirstSeen.UTC(), f.LastSeen.UTC(), gone, int64(f.Lifetime / time.Second), f.Status})
}

// when is the instant a flag is sorted by: GoneAt, or LastSeen when present.
func (f *Flag) when() time.Time {
	if f.GoneAt != nil {
		return *f.GoneAt
	}
	return f.LastSeen
}

// Flags returns the disappearing floor listings of the snapshot.
//
// Disappeared: snap.Gone entries with FloorAt set, a lifetime
// (LastSeen - FirstSeen) below MinLife and AsOf - Window <= GoneAt <= AsOf.
// Their prices convert with the FX rates of their source's snapshot run.
//
// Unconfirmed, only when pending is true: present floor listings (see the
// package comment: FloorAt set and not after their run, or at or below their
// row's p10 in this snapshot) whose RunStarted - FirstSeen is below MinLife;
// LastSeen is RunStarted, Lifetime RunStarted - FirstSeen, GoneAt nil.
//
// Flags are sorted by GoneAt (or LastSeen) descending, then source, id and
// kind.
func Flags(snap *listings.Snapshot, p Params, pending bool) []Flag {
	m := newMarket(snap, p)
	flags := m.disappeared()
	if pending {
		flags = append(flags, m.unconfirmed()...)
	}
	sort.Slice(flags, func(i, j int) bool {
		a, b := &flags[i], &flags[j]
		if wa, wb := a.when(), b.when(); !wa.Equal(wb) {
			return wa.After(wb)
		}
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Kind < b.Kind
	})
	return flags
}

// disappeared lists the disappearing floor listings of snap.Gone.
func (m *market) disappeared() []Flag {
	var out []Flag
	from := m.snap.AsOf.Add(-m.p.Window)
	for i := range m.snap.Gone {
		g := &m.snap.Gone[i]
		life := g.Lifetime()
		if g.FloorAt.IsZero() || life >= m.p.MinLife || g.GoneAt.Before(from) || g.GoneAt.After(m.snap.AsOf) {
			continue
		}
		price, cur := rowPrice(m.snap, g.Source, g.Price, g.Currency)
		gone := g.GoneAt
		out = append(out, Flag{
			Source: g.Source, ID: g.ID, GPU: g.GPU, Kind: g.Kind,
			Price: price, Currency: cur,
			FirstSeen: g.FirstSeen, LastSeen: g.LastSeen, GoneAt: &gone,
			Lifetime: life, Status: Disappeared,
		})
	}
	return out
}

// unconfirmed lists the present floor listings younger than MinLife.
func (m *market) unconfirmed() []Flag {
	var out []Flag
	for _, g := range m.groups {
		for _, x := range g.members {
			life := age(x.pr)
			if life >= m.p.MinLife || !g.isFloor(x) {
				continue
			}
			out = append(out, Flag{
				Source: x.pr.Source, ID: x.pr.ID, GPU: x.pr.GPU, Kind: x.pr.Kind,
				Price: x.price, Currency: g.currency,
				FirstSeen: x.pr.FirstSeen, LastSeen: x.pr.RunStarted,
				Lifetime: life, Status: Unconfirmed,
			})
		}
	}
	return out
}
