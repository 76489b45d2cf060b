package stats

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/listings-dev/listings"
)

// vastOffer is the part of a Vast.ai offer the price pin needs.
type vastOffer struct {
	ID      float64 `json:"id"`
	GPUName string  `json:"gpu_name"`
	DPHBase float64 `json:"dph_base"`
	NumGPUs float64 `json:"num_gpus"`
}

// TestRealRecordingRTX4090 pins the acceptance numbers of issue 2 on the
// real 1,396-offer recording: the 311 RTX 4090 on-demand listings
// (dph_base / num_gpus per GPU-hour) have median 0.422186 ($0.4222) and
// floor 0.16.
func TestRealRecordingRTX4090(t *testing.T) {
	b, err := os.ReadFile("../fixtures/vastai/vast-search-offers-full-2024-11-05.json")
	if err != nil {
		t.Fatalf("read recording: %v", err)
	}
	var offers []vastOffer
	if err := json.Unmarshal(b, &offers); err != nil {
		t.Fatalf("decode recording: %v", err)
	}
	if len(offers) != 1396 {
		t.Fatalf("recording: got %d offers, want 1396", len(offers))
	}
	snap := &listings.Snapshot{AsOf: t0, Runs: map[string]listings.Run{"vastai": {Source: "vastai", Started: t0, Status: listings.RunOK}}}
	for _, o := range offers {
		gpu, _ := listings.Normalize(o.GPUName, 0)
		if gpu != "RTX 4090" {
			continue
		}
		price, err := listings.PriceFromFloat(o.DPHBase / o.NumGPUs)
		if err != nil {
			t.Fatalf("offer %v: price: %v", o.ID, err)
		}
		p := pr("vastai", "", gpu, od, "0", t0, t0)
		p.ID = strconv.FormatInt(int64(o.ID), 10)
		p.Price = price
		snap.Present = append(snap.Present, p)
	}
	rows := Rows(snap, Params{})
	if len(rows) != 1 {
		t.Fatalf("Rows: got %d rows, want 1 (RTX 4090 on-demand)", len(rows))
	}
	r := rows[0]
	tests := []struct {
		field     string
		got, want any
	}{
		{"listings", r.Listings, 311},
		{"median", r.Median, P("0.422186")},
		{"median as the CLI shows it", fmt.Sprintf("$%.4f", r.Median.Float()), "$0.4222"},
		{"floor", r.Floor, P("0.16")},
		{"live", r.Live, true},
		{"vastai listings", r.Sources[0].Listings, 311},
		{"vastai median", r.Sources[0].Median, P("0.422186")},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("RTX 4090 %s = %v, want %v", tt.field, tt.got, tt.want)
		}
	}
	if r.P10 > r.P25 || r.P25 > r.Median || r.Median > r.P75 || r.P75 > r.P90 || r.Floor > r.P10 {
		t.Errorf("RTX 4090 percentiles out of order: floor %v p10 %v p25 %v median %v p75 %v p90 %v", r.Floor, r.P10, r.P25, r.Median, r.P75, r.P90)
	}
}
