package stats

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/listings-dev/listings"
)

// Params are the tunable limits of the definitions.
type Params struct {
	MinLife time.Duration // default listings.DefaultMinLife when 0 (or negative)
	Window  time.Duration // disappearing window; default listings.FlagWindow (7d) when 0 (or negative)
}

// withDefaults fills the zero fields of p.
func (p Params) withDefaults() Params {
	if p.MinLife <= 0 {
		p.MinLife = listings.DefaultMinLife
	}
	if p.Window <= 0 {
		p.Window = listings.FlagWindow
	}
	return p
}

// Convert applies an FX rate to turn price p, in currency, into USD. fx maps
// a currency code to the USD value of one unit, as a Price in micro-USD (the
// rates recorded with a run: snap.Runs[source].FX). USD (and an empty
// currency) is returned as is. ok is false when there is no positive rate for
// currency; usd is then p unchanged, still in its own currency.
func Convert(p listings.Price, currency string, fx map[string]listings.Price) (usd listings.Price, ok bool) {
	if currency == "" || strings.EqualFold(currency, listings.USD) {
		return p, true
	}
	rate, found := fx[currency]
	if !found {
		rate, found = fx[strings.ToUpper(currency)]
	}
	if !found || rate <= 0 {
		return p, false
	}
	return p.MulDiv(int64(rate), listings.Micro), true
}

// member is one present listing of a row, its price in the row's currency.
type member struct {
	pr    *listings.Presence
	price listings.Price
}

// group is the listings of one row key.
type group struct {
	gpu      string
	kind     listings.Kind
	currency string
	members  []member
	sorted   []listings.Price // ascending
	p10      listings.Price
}

// rowKey identifies a row without building the listings.RowKey string.
type rowKey struct {
	gpu      string
	kind     listings.Kind
	currency string
}

// parseRowKey splits a listings.RowKey.
func parseRowKey(k string) rowKey {
	gpu, rest, _ := strings.Cut(k, "\x00")
	kind, cur, _ := strings.Cut(rest, "\x00")
	return rowKey{gpu, listings.Kind(kind), cur}
}

// market is a snapshot grouped into rows.
type market struct {
	snap   *listings.Snapshot
	p      Params
	groups map[rowKey]*group
}

// rowPrice converts a price of source into its row currency, with the FX
// rates of that source's snapshot run.
func rowPrice(snap *listings.Snapshot, source string, p listings.Price, currency string) (listings.Price, string) {
	if v, ok := Convert(p, currency, snap.Runs[source].FX); ok {
		return v, listings.USD
	}
	return p, currency
}

// newMarket groups the snapshot's present listings by row.
func newMarket(snap *listings.Snapshot, p Params) *market {
	m := &market{snap: snap, p: p.withDefaults(), groups: map[rowKey]*group{}}
	for i := range snap.Present {
		pr := &snap.Present[i]
		price, cur := rowPrice(snap, pr.Source, pr.Price, pr.Currency)
		key := rowKey{pr.GPU, pr.Kind, cur}
		g := m.groups[key]
		if g == nil {
			g = &group{gpu: pr.GPU, kind: pr.Kind, currency: cur}
			m.groups[key] = g
		}
		g.members = append(g.members, member{pr: pr, price: price})
	}
	for _, g := range m.groups {
		g.sorted = make([]listings.Price, len(g.members))
		for i, x := range g.members {
			g.sorted[i] = x.price
		}
		slices.Sort(g.sorted)
		g.p10 = Percentile(g.sorted, 0.10)
	}
	return m
}

// isFloor tells whether a present listing of g is a floor listing: marked by
// an earlier run (FloorAt set, not after its run), or at or below the row's
// p10 in this snapshot.
func (g *group) isFloor(x member) bool {
	fa := x.pr.FloorAt
	return (!fa.IsZero() && !fa.After(x.pr.RunStarted)) || x.price <= g.p10
}

// age is how long a present listing has been continuously present.
func age(pr *listings.Presence) time.Duration { return pr.RunStarted.Sub(pr.FirstSeen) }

// Rows computes one Row per (gpu, kind, currency) present in snap.Present,
// plus one row that is not live per key of snap.LastListed with no present
// listings (Live false, Listings 0, LastOKRun that time). Rows are sorted by
// catalog order of GPU (listings.SortGPUNames), then kind order (on-demand,
// interruptible, monthly), then currency (USD first). The package comment
// defines every field.
func Rows(snap *listings.Snapshot, p Params) []listings.Row {
	return newMarket(snap, p).rows()
}

func (m *market) rows() []listings.Row {
	disappearing := map[rowKey]int{}
	for _, f := range m.disappeared() {
		disappearing[rowKey{f.GPU, f.Kind, f.Currency}]++
	}
	rows := make([]listings.Row, 0, len(m.groups)+len(m.snap.LastListed))
	for key, g := range m.groups {
		row := listings.Row{
			GPU:          g.gpu,
			Kind:         g.kind,
			Currency:     g.currency,
			AsOf:         m.snap.AsOf,
			Live:         true,
			Listings:     len(g.sorted),
			Median:       Median(g.sorted),
			P10:          g.p10,
			P25:          Percentile(g.sorted, 0.25),
			P75:          Percentile(g.sorted, 0.75),
			P90:          Percentile(g.sorted, 0.90),
			Floor:        g.sorted[0],
			Disappearing: disappearing[key],
			Sources:      m.sources(g),
		}
		for _, x := range g.members {
			if x.pr.RunStarted.After(row.LastOKRun) {
				row.LastOKRun = x.pr.RunStarted
			}
			young := age(x.pr) < m.p.MinLife
			if !young && (row.DurableFloor == nil || x.price < *row.DurableFloor) {
				v := x.price
				row.DurableFloor = &v
			}
			if young && g.isFloor(x) {
				row.Unconfirmed++
			}
		}
		rows = append(rows, row)
	}
	for k, at := range m.snap.LastListed {
		key := parseRowKey(k)
		if m.groups[key] != nil {
			continue
		}
		rows = append(rows, listings.Row{
			GPU:          key.gpu,
			Kind:         key.kind,
			Currency:     key.currency,
			AsOf:         m.snap.AsOf,
			Disappearing: disappearing[key],
			LastOKRun:    at,
			Sources:      []listings.SourceRow{},
		})
	}
	sortRows(rows)
	return rows
}

// sources is the per-source breakdown of g, sorted by source.
func (m *market) sources(g *group) []listings.SourceRow {
	ms := slices.Clone(g.members)
	slices.SortFunc(ms, func(a, b member) int {
		if c := strings.Compare(a.pr.Source, b.pr.Source); c != 0 {
			return c
		}
		return cmp.Compare(a.price, b.price)
	})
	var out []listings.SourceRow
	prices := make([]listings.Price, 0, len(ms))
	for i := 0; i < len(ms); {
		src := ms[i].pr.Source
		prices = prices[:0]
		var last time.Time
		for ; i < len(ms) && ms[i].pr.Source == src; i++ {
			prices = append(prices, ms[i].price)
			if ms[i].pr.RunStarted.After(last) {
				last = ms[i].pr.RunStarted
			}
		}
		// A source's part is as old as its snapshot run; the presences'
		// own run time stands in if the run is missing from snap.Runs.
		if run, ok := m.snap.Runs[src]; ok && !run.Started.IsZero() {
			last = run.Started
		}
		out = append(out, listings.SourceRow{Source: src, Listings: len(prices), Median: Median(prices), LastOKRun: last})
	}
	return out
}

// sortRows orders rows by catalog GPU order, kind order, then currency with
// USD first.
func sortRows(rows []listings.Row) {
	var names []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.GPU] {
			seen[r.GPU] = true
			names = append(names, r.GPU)
		}
	}
	listings.SortGPUNames(names)
	rank := make(map[string]int, len(names))
	for i, n := range names {
		rank[n] = i
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if ra, rb := rank[a.GPU], rank[b.GPU]; ra != rb {
			return ra < rb
		}
		if ka, kb := kindRank(a.Kind), kindRank(b.Kind); ka != kb {
			return ka < kb
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if ua, ub := a.Currency == listings.USD, b.Currency == listings.USD; ua != ub {
			return ua
		}
		return a.Currency < b.Currency
	})
}

// kindRank is the position of k in listings.Kinds; unknown kinds come last.
func kindRank(k listings.Kind) int {
	if i := slices.Index(listings.Kinds, k); i >= 0 {
		return i
	}
	return len(listings.Kinds)
}

// FloorKeys returns the keys (id + "\x00" + kind, as listings.Listing.Key)
// of source's present listings in snap whose price, converted as in Rows, is
// at or below the p10 of their row in rows: DESIGN's floor-listing test at
// that run. The keys are sorted and unique.
func FloorKeys(snap *listings.Snapshot, rows []listings.Row, source string) []string {
	p10 := make(map[string]listings.Price, len(rows))
	for _, r := range rows {
		if r.Listings > 0 {
			p10[listings.RowKey(r.GPU, r.Kind, r.Currency)] = r.P10
		}
	}
	var keys []string
	for i := range snap.Present {
		pr := &snap.Present[i]
		if pr.Source != source {
			continue
		}
		price, cur := rowPrice(snap, pr.Source, pr.Price, pr.Currency)
		if limit, ok := p10[listings.RowKey(pr.GPU, pr.Kind, cur)]; ok && price <= limit {
			keys = append(keys, pr.ID+"\x00"+string(pr.Kind))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Derive is the function the index calls inside a run's write transaction:
// rows = Rows(snap, p); floor = FloorKeys(snap, rows, source).
func Derive(p Params, source string) func(snap *listings.Snapshot) ([]listings.Row, []string) {
	return func(snap *listings.Snapshot) ([]listings.Row, []string) {
		rows := Rows(snap, p)
		return rows, FloorKeys(snap, rows, source)
	}
}
