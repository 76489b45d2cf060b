// Package listings holds the domain of the GPU-rental price index: the
// listings collected from sources, the runs that collected them, prices as
// integer micro-units, and the GPU catalog with its name normaliser.
//
// It imports the standard library only; every other package of the module
// builds on it (see DESIGN §1): scrapers/ produce Listings and Runs, index/
// stores them in bbolt, stats/ turns them into market rows, recommend/ turns
// rows into advice and cmd/listings wires them together.
package listings

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind is how a listing is rented.
type Kind string

// The kinds of DESIGN §2.
const (
	OnDemand      Kind = "on-demand"
	Interruptible Kind = "interruptible" // spot or bid capacity
	Monthly       Kind = "monthly"       // a fixed monthly price, stored per hour (monthly / 730)
)

// Kinds lists every kind in display order.
var Kinds = []Kind{OnDemand, Interruptible, Monthly}

// ParseKind reads a kind name; "spot" and "bid" mean interruptible,
// "ondemand" on-demand.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on-demand", "ondemand", "on_demand":
		return OnDemand, nil
	case "interruptible", "spot", "bid":
		return Interruptible, nil
	case "monthly":
		return Monthly, nil
	}
	return "", fmt.Errorf("unknown kind %q (want on-demand, interruptible or monthly)", s)
}

// USD is the currency of every statistic.
const USD = "USD"

// Listing is one rentable offer at one source. A source may list the same
// offer id under several kinds (Vast's on-demand and interruptible prices of
// one machine); the identity of a listing is (Source, ID, Kind).
type Listing struct {
	Source   string  `json:"source"`
	ID       string  `json:"id"`
	GPU      string  `json:"gpu"`       // canonical catalog name, or the source's name when unknown
	Known    bool    `json:"known"`     // GPU is a catalog name
	RawGPU   string  `json:"raw_gpu"`   // the source's own GPU name
	GPUCount int     `json:"gpu_count"` // GPUs in the offer
	VRAMGB   float64 `json:"vram_gb"`   // per GPU, as the source lists it
	Kind     Kind    `json:"kind"`
	Price    Price   `json:"price"`    // per GPU-hour, in Currency
	Currency string  `json:"currency"` // ISO code, "USD" for most sources
	Listed   string  `json:"listed"`   // the original price fields, for audit ("dph_base=0.8 num_gpus=2")
	Region   string  `json:"region,omitempty"`
	// Reliability is 0..1; negative means the source does not say.
	Reliability  float64 `json:"reliability"`
	DiskGB       float64 `json:"disk_gb,omitempty"`
	StoragePrice Price   `json:"storage_price,omitempty"` // per GB-month, where listed
	Available    bool    `json:"available"`               // false for types the source lists as sold out
	Verification string  `json:"verification,omitempty"`  // the source's own verification label
	MaxCount     int     `json:"max_count,omitempty"`     // units available, where the source says
	Interconnect string  `json:"interconnect,omitempty"`  // SXM, NVLink, PCIe ... where known
}

// Key is the listing's identity within its source: id and kind.
func (l *Listing) Key() string { return l.ID + "\x00" + string(l.Kind) }

// RunStatus is the outcome of a run.
type RunStatus string

// Run statuses.
const (
	RunOK     RunStatus = "ok"
	RunFailed RunStatus = "failed"
)

// Reject is one row a source returned that did not become a listing.
type Reject struct {
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Reasons for rejected rows, counted per run.
const (
	RejectBadPrice     = "bad price"      // NaN, not a number, unparseable
	RejectZeroPrice    = "zero price"     // zero or missing price
	RejectNegative     = "negative price" // below zero
	RejectAboveCap     = "price above cap"
	RejectZeroGPUs     = "zero gpus"
	RejectDuplicateID  = "duplicate id"
	RejectBadRow       = "malformed row" // a field of the wrong type, a row that is not an object
	RejectBidAboveBase = "min_bid above dph_base"
	RejectNoID         = "missing id"
)

// Run is one collection of one source.
type Run struct {
	Source   string         `json:"source"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Status   RunStatus      `json:"status"`
	Listings int            `json:"listings"`
	Rejects  map[string]int `json:"rejects,omitempty"` // reason -> count
	Unknown  map[string]int `json:"unknown,omitempty"` // unknown GPU name -> listings kept under it
	Error    string         `json:"error,omitempty"`
	Pages    int            `json:"pages"`
	Bytes    int64          `json:"bytes"`
	Retries  int            `json:"retries"`
	// FX holds the rates (1 unit of the key currency in USD, as micro-units)
	// configured when the run was collected; statistics convert with these.
	FX     map[string]Price `json:"fx,omitempty"`
	FXDate string           `json:"fx_date,omitempty"` // when the user set the rates (config fx_date)
	Notes  []string         `json:"notes,omitempty"`
}

// Rejected is the total number of rejected rows.
func (r *Run) Rejected() int {
	n := 0
	for _, c := range r.Rejects {
		n += c
	}
	return n
}

// CountRejects fills r.Rejects from rejects.
func (r *Run) CountRejects(rejects []Reject) {
	if len(rejects) == 0 {
		return
	}
	if r.Rejects == nil {
		r.Rejects = map[string]int{}
	}
	for _, x := range rejects {
		r.Rejects[x.Reason]++
	}
}

// RejectSummary formats the reject counts as "reason: n, reason: n" sorted
// by reason.
func (r *Run) RejectSummary() string {
	keys := make([]string, 0, len(r.Rejects))
	for k := range r.Rejects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, r.Rejects[k])
	}
	return strings.Join(parts, ", ")
}

// Segment is a span during which one listing was continuously present at one
// price: from the ok run that opened it (Start) to the last ok run that saw
// it (End). FirstSeen is the start of the listing's continuous presence,
// which may be older than Start when the price changed; FloorAt is the first
// run of that presence at which the listing was a floor listing (zero if it
// has not been one).
type Segment struct {
	Source    string    `json:"source"`
	ID        string    `json:"id"`
	GPU       string    `json:"gpu"`
	Kind      Kind      `json:"kind"`
	Price     Price     `json:"price"`
	Currency  string    `json:"currency"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	FirstSeen time.Time `json:"first_seen"`
	FloorAt   time.Time `json:"floor_at,omitzero"`
	// DiskGB is the disk the listing offered when the segment was last
	// extended; the recommender checks datasets and checkpoints against it.
	DiskGB float64 `json:"disk_gb,omitempty"`
}

// Presence is one listing as it stands in a market snapshot: a segment that
// covers the snapshot run of its source, with that run's start time.
type Presence struct {
	Segment
	RunStarted time.Time `json:"run_started"`
}

// Gone is a listing that disappeared: the first ok run of its source after
// LastSeen did not list it, and GoneAt is that run's start.
type Gone struct {
	Source    string    `json:"source"`
	ID        string    `json:"id"`
	GPU       string    `json:"gpu"`
	Kind      Kind      `json:"kind"`
	Price     Price     `json:"price"`
	Currency  string    `json:"currency"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	GoneAt    time.Time `json:"gone_at"`
	FloorAt   time.Time `json:"floor_at,omitzero"` // zero: never a floor listing
}

// Lifetime is how long the listing was continuously present.
func (g *Gone) Lifetime() time.Duration { return g.LastSeen.Sub(g.FirstSeen) }
