package scrapers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/listings-dev/listings"
)

// TensorDockURL is TensorDock's v2 locations endpoint.
const TensorDockURL = "https://dashboard.tensordock.com/api/v2/locations"

// TensorDock collects TensorDock's GPU stock per location (source
// "tensordock", enabled by default, no key).
//
// One listing per (location × GPU model), id "<location id>/<v0Name>", kind
// on-demand, at price_per_hr per GPU-hour with GPUCount 1. That price is the
// GPU's alone: a TensorDock VM also pays per vCPU, per GB of RAM and per GB
// of disk (the pricing object), so its prices read lower than the all-in
// prices of other sources. MaxCount is max_count, the GPUs of that model the
// location says it has free; max_count 0 means sold out (Available false).
// TensorDock's availability is often stale: a location may list GPUs that a
// deploy then fails to find, and max_count is known to be inaccurate, so
// Available here means "listed as available", no more.
type TensorDock struct{}

func init() { Register(TensorDock{}, true) }

// Name returns "tensordock".
func (TensorDock) Name() string { return "tensordock" }

// DefaultURL returns TensorDockURL.
func (TensorDock) DefaultURL() string { return TensorDockURL }

// Collect fetches env.URL and parses it.
func (TensorDock) Collect(ctx context.Context, env *Env) (*Result, error) {
	body, err := env.Client.Get(ctx, env.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("tensordock: fetch locations: %w", err)
	}
	ls, rejects, err := ParseTensorDock(body, env.PriceCap)
	if err != nil {
		return nil, err
	}
	return &Result{Listings: ls, Rejects: rejects}, nil
}

// tdLocation is one entry of data.locations; its GPUs are decoded one by
// one.
type tdLocation struct {
	ID            string            `json:"id"`
	City          string            `json:"city"`
	StateProvince string            `json:"stateprovince"`
	Country       string            `json:"country"`
	Tier          *float64          `json:"tier"`
	GPUs          []json.RawMessage `json:"gpus"`
}

// tdGPU is one GPU model at a location.
type tdGPU struct {
	V0Name      string   `json:"v0Name"`
	DisplayName string   `json:"displayName"`
	MaxCount    *float64 `json:"max_count"`
	PricePerHr  *float64 `json:"price_per_hr"`
	Resources   struct {
		MaxStorageGB *float64 `json:"max_storage_gb"`
	} `json:"resources"`
	Pricing struct {
		PerGBStorageHr *float64 `json:"per_gb_storage_hr"`
	} `json:"pricing"`
}

// tdVRAM reads the memory size at the end of a v0Name
// ("geforcertx4090-pcie-24gb").
var tdVRAM = regexp.MustCompile(`(?i)-(\d+)gb$`)

// tdForm reads the form factor inside a v0Name ("-pcie-", "-sxm5-").
var tdForm = regexp.MustCompile(`(?i)-(pcie|sxm\d?)-`)

// ParseTensorDock parses TensorDock's v2 locations response
// {"data":{"locations":[{id, city, stateprovince, country, tier, gpus:[...]}]}}.
//
// Each location and each of its GPUs is decoded on its own: a location
// whose fields have the wrong type is rejected as one malformed row, a GPU
// entry likewise without its neighbours. A missing or null price_per_hr is
// rejected as a zero price. The GPU is named from v0Name (displayName when
// v0Name is not a catalog name); VRAM comes from v0Name's "-24gb" suffix or,
// failing that, the catalog. DiskGB is resources.max_storage_gb, the most
// disk a VM there can have, and StoragePrice is per_gb_storage_hr × 730 (per
// GB-month). Region is "city, stateprovince, country" and Verification
// "tier N" when the location has a tier.
func ParseTensorDock(body []byte, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	var env struct {
		Data struct {
			Locations json.RawMessage `json:"locations"`
		} `json:"data"`
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, nil, fmt.Errorf("tensordock: decode response: %w", err)
	}
	locs := bytes.TrimSpace(env.Data.Locations)
	if len(locs) == 0 || locs[0] != '[' {
		if msg := strings.TrimSpace(string(env.Error) + " " + string(env.Message)); msg != "" {
			return nil, nil, fmt.Errorf("tensordock: api error: %s", clipText(msg, 200))
		}
		return nil, nil, errors.New("tensordock: decode response: no data.locations array in the answer")
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(locs, &rows); err != nil {
		return nil, nil, fmt.Errorf("tensordock: decode data.locations: %w", err)
	}
	b := NewBatch("tensordock")
	for i, raw := range rows {
		var loc tdLocation
		if err := json.Unmarshal(raw, &loc); err != nil {
			b.Rejectf(loc.ID, listings.RejectBadRow, "locations[%d]: %v", i, err)
			continue
		}
		tier := ""
		if loc.Tier != nil {
			tier = "tier " + strconv.FormatFloat(*loc.Tier, 'f', -1, 64)
		}
		var parts []string
		for _, p := range []string{loc.City, loc.StateProvince, loc.Country} {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		region := strings.Join(parts, ", ")
		for j, graw := range loc.GPUs {
			var g tdGPU
			if err := json.Unmarshal(graw, &g); err != nil {
				b.Rejectf(tdID(loc.ID, g.V0Name), listings.RejectBadRow, "locations[%d].gpus[%d]: %v", i, j, err)
				continue
			}
			tdListing(b, &loc, &g, region, tier, limit)
		}
	}
	return b.Listings, b.Rejects, nil
}

// tdID is a listing's id; empty when either part is missing.
func tdID(loc, v0Name string) string {
	if loc == "" || v0Name == "" {
		return ""
	}
	return loc + "/" + v0Name
}

// tdListing adds the listing of one GPU model at one location to b.
func tdListing(b *Batch, loc *tdLocation, g *tdGPU, region, tier string, limit listings.Price) {
	id := tdID(loc.ID, g.V0Name)
	if id == "" {
		b.Rejectf("", listings.RejectNoID, "location %q gpu %q", clipText(loc.ID, 80), clipText(g.V0Name, 80))
		return
	}
	maxCount, ok := wholeNumber(g.MaxCount)
	if !ok {
		b.Rejectf(id, listings.RejectBadRow, "max_count=%s", fmtFloat(g.MaxCount))
		return
	}
	if g.PricePerHr == nil {
		b.Reject(id, listings.RejectZeroPrice, "price_per_hr missing")
		return
	}
	price, reason := CheckPrice(*g.PricePerHr, limit)
	if reason != "" {
		b.Rejectf(id, reason, "price_per_hr=%v", *g.PricePerHr)
		return
	}
	vram := 0.0
	if m := tdVRAM.FindStringSubmatch(g.V0Name); m != nil {
		if v, err := strconv.Atoi(m[1]); err == nil && v <= 1<<16 {
			vram = float64(v)
		}
	}
	raw := g.V0Name
	gpu, known := normalizeGPU(vram, g.V0Name, g.DisplayName)
	if vram == 0 && known {
		if c, ok := listings.Lookup(gpu); ok {
			vram = float64(c.VRAMGB)
		}
	}
	form := ""
	if m := tdForm.FindStringSubmatch(g.V0Name); m != nil {
		form = strings.ToUpper(m[1])
		if form == "PCIE" {
			form = "PCIe"
		}
	}
	l := listings.Listing{
		ID:           id,
		GPU:          gpu,
		Known:        known,
		RawGPU:       clipText(raw, maxGPUName),
		GPUCount:     1,
		VRAMGB:       vram,
		Kind:         listings.OnDemand,
		Price:        price,
		Listed:       fmt.Sprintf("price_per_hr=%s max_count=%s", strconv.FormatFloat(*g.PricePerHr, 'f', -1, 64), fmtFloat(g.MaxCount)),
		Region:       region,
		Reliability:  -1,
		Available:    g.MaxCount == nil || maxCount > 0,
		Verification: tier,
		MaxCount:     maxCount,
		Interconnect: form,
	}
	if d := g.Resources.MaxStorageGB; d != nil && *d > 0 {
		l.DiskGB = *d
	}
	if s := g.Pricing.PerGBStorageHr; s != nil && *s > 0 && *s < math.MaxInt32 {
		if p, err := listings.PriceFromFloat(*s * listings.HoursPerMonth); err == nil {
			l.StoragePrice = p
		}
	}
	b.Add(l)
}
