// Package scrapers collects listings from GPU marketplaces. Each source is
// one file that registers itself in init() (no I/O there): a fetch step on the
// shared polite HTTP layer (Client) and a pure parse function that takes the
// response bytes (or a *goquery.Document for HTML pages) and returns
// listings and rejected rows, so parsers are tested on fixtures alone.
package scrapers

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/listings-dev/listings"
)

// Source is one collector.
type Source interface {
	// Name is the source's name in flags, config and the index ("vastai").
	Name() string
	// DefaultURL is the endpoint used when neither config nor --source-url
	// overrides it.
	DefaultURL() string
	// Collect fetches and parses the source. A returned error fails the run;
	// rows it could not use are reported in Result.Rejects, not as an error.
	Collect(ctx context.Context, env *Env) (*Result, error)
}

// Env is what a collector needs from the outside world.
type Env struct {
	URL      string              // endpoint: the default, the config's, or --source-url
	Client   *Client             // the shared polite HTTP layer
	Now      time.Time           // the run's observed-at time
	Getenv   func(string) string // environment (API keys); never logged
	PriceCap listings.Price      // rows above it are rejected (DESIGN §7)
	Log      *slog.Logger        // the source's own logger
	Options  map[string]any      // the source's config table, for sources defined in config
}

// Result is what one collection produced.
type Result struct {
	Listings []listings.Listing
	Rejects  []listings.Reject
	Notes    []string
}

type entry struct {
	src     Source
	enabled bool
}

var (
	regMu    sync.Mutex
	registry = map[string]entry{}
)

// Register adds a source. enabled says whether a plain `collect` runs it
// when the config does not say. It panics on a duplicate name: that is a
// programming error caught by every test run.
func Register(s Source, enabled bool) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[s.Name()]; dup {
		panic("scrapers: source registered twice: " + s.Name())
	}
	registry[s.Name()] = entry{s, enabled}
}

// Get returns the registered source called name.
func Get(name string) (Source, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	e, ok := registry[name]
	return e.src, ok
}

// Names lists every registered source, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// EnabledByDefault reports whether a plain `collect` runs the source.
func EnabledByDefault(name string) bool {
	regMu.Lock()
	defer regMu.Unlock()
	return registry[name].enabled
}
