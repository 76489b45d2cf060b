package scrapers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/listings-dev/listings"
)

const tensorDockFixture = "tensordock/locations.json"

func TestParseTensorDockFixture(t *testing.T) {
	ls, rejects, err := ParseTensorDock(readJSONFixture(t, tensorDockFixture), DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseTensorDock: %v", err)
	}
	checkParsed(t, ls, DefaultPriceCap)
	if len(rejects) != 0 {
		t.Errorf("got rejects %+v, want none", rejects)
	}
	if got, want := len(ls), 13; got != want {
		t.Errorf("got %d listings, want %d", got, want)
	}
	const (
		dallas    = "7a2f5c84-1e6b-4d93-8c07-3b9e2d5a6f41"
		frankfurt = "b3e8f6a2-4c1d-49b7-9e25-8d0a7f4c3e96"
		manassas  = "4e9d2a61-8f3b-47c5-b0d2-6a1e5c8f3b27"
	)
	tests := []struct {
		id    string
		gpu   string
		vram  float64
		price string
		max   int
		avail bool
	}{
		{dallas + "/geforcertx4090-pcie-24gb", "RTX 4090", 24, "0.40", 2, true},
		{dallas + "/rtxa6000-pcie-48gb", "RTX A6000", 48, "0.45", 0, false},
		{dallas + "/l40-pcie-48gb", "L40", 48, "0.85", 4, true},
		{frankfurt + "/h100-sxm5-80gb", "H100 SXM", 80, "2.40", 0, false},
		{frankfurt + "/a100-pcie-80gb", "A100 80GB PCIe", 80, "1.30", 4, true},
		{manassas + "/h100-sxm5-80gb", "H100 SXM", 80, "2.25", 8, true},
		{"9c4b1d37-2a8e-4f60-a5d9-7e3c1b8f2d05/geforcertx3090-pcie-24gb", "RTX 3090", 24, "0.22", 3, true},
	}
	byKey := listingByKey(ls)
	for _, tc := range tests {
		l, ok := byKey[tc.id+"|on-demand"]
		if !ok {
			t.Errorf("%s: no listing", tc.id)
			continue
		}
		if got, want := l.Price, mustPrice(t, tc.price); got != want {
			t.Errorf("%s: got price %s, want %s", tc.id, got.Decimal(), want.Decimal())
		}
		if l.GPU != tc.gpu || !l.Known || l.VRAMGB != tc.vram {
			t.Errorf("%s: got %q known %v %v GB, want %q known %v GB", tc.id, l.GPU, l.Known, l.VRAMGB, tc.gpu, tc.vram)
		}
		if l.MaxCount != tc.max || l.Available != tc.avail || l.GPUCount != 1 {
			t.Errorf("%s: got max %d available %v gpus %d, want %d %v 1", tc.id, l.MaxCount, l.Available, l.GPUCount, tc.max, tc.avail)
		}
	}
	want := listings.Listing{
		Source: "tensordock", ID: manassas + "/h100-sxm5-80gb", GPU: "H100 SXM", Known: true,
		RawGPU: "h100-sxm5-80gb", GPUCount: 1, VRAMGB: 80, Kind: listings.OnDemand,
		Price: mustPrice(t, "2.25"), Currency: "USD", Listed: "price_per_hr=2.25 max_count=8",
		Region: "Manassas, Virginia, United States", Reliability: -1, DiskGB: 20000,
		StoragePrice: mustPrice(t, "0.0438"), Available: true, Verification: "tier 4",
		MaxCount: 8, Interconnect: "SXM5",
	}
	if got := byKey[want.ID+"|on-demand"]; !reflect.DeepEqual(got, want) {
		t.Errorf("Manassas H100:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseTensorDockBadRows(t *testing.T) {
	body := `{"data":{"locations":[
	 {"id":"loc-a","city":"Chubbuck","stateprovince":"Idaho","country":"United States","tier":3,"gpus":[
	   {"v0Name":"geforcertx4090-pcie-24gb","displayName":"RTX 4090","max_count":8,"price_per_hr":0.37},
	   {"v0Name":"geforcertx4090-pcie-24gb","displayName":"RTX 4090","max_count":8,"price_per_hr":0.30},
	   {"v0Name":"geforcertx3090-pcie-24gb","max_count":4,"price_per_hr":"NaN"},
	   {"v0Name":"l40-pcie-48gb","max_count":4,"price_per_hr":-0.85},
	   {"v0Name":"h100-sxm5-80gb","max_count":8,"price_per_hr":99999},
	   {"v0Name":"a100-pcie-80gb","max_count":2,"price_per_hr":0},
	   {"v0Name":"rtxa6000-pcie-48gb","max_count":2},
	   {"v0Name":"l4-pcie-24gb","max_count":1.5,"price_per_hr":0.3},
	   {"v0Name":"","displayName":"anonymous","max_count":1,"price_per_hr":0.3},
	   {"v0Name":"quantum-qpu-1024gb","displayName":"Quantum QPU","max_count":1,"price_per_hr":9.5},
	   {"v0Name":"mystery-gpu","displayName":"NVIDIA L40S","price_per_hr":0.79},
	   "not a gpu"
	 ]},
	 {"id":"loc-b","city":"Dallas","tier":"three","gpus":[{"v0Name":"l40-pcie-48gb","max_count":1,"price_per_hr":0.8}]},
	 {"id":"loc-c","city":"Orlando","stateprovince":"","country":"United States","gpus":"none"},
	 {"city":"Nowhere","gpus":[{"v0Name":"l40-pcie-48gb","max_count":1,"price_per_hr":0.8}]},
	 {"id":"loc-d","city":"Amsterdam","country":"Netherlands","gpus":[{"v0Name":"l40-pcie-48gb","max_count":1,"price_per_hr":0.81}]}
	]}}`
	ls, rejects, err := ParseTensorDock([]byte(body), DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseTensorDock: %v", err)
	}
	checkParsed(t, ls, DefaultPriceCap)
	var got []string
	for _, l := range ls {
		got = append(got, l.ID+" "+l.GPU+" "+l.Price.Decimal()+" "+l.Region)
	}
	want := []string{
		"loc-a/geforcertx4090-pcie-24gb RTX 4090 0.37 Chubbuck, Idaho, United States",
		"loc-a/quantum-qpu-1024gb quantum-qpu-1024gb 9.50 Chubbuck, Idaho, United States",
		"loc-a/mystery-gpu L40S 0.79 Chubbuck, Idaho, United States",
		"loc-d/l40-pcie-48gb L40 0.81 Amsterdam, Netherlands",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listings:\n got %q\nwant %q", got, want)
	}
	byKey := listingByKey(ls)
	if l := byKey["loc-a/quantum-qpu-1024gb|on-demand"]; l.Known || l.VRAMGB != 1024 {
		t.Errorf("unknown GPU: got known %v vram %v, want unknown, 1024 from its name", l.Known, l.VRAMGB)
	}
	if l := byKey["loc-a/mystery-gpu|on-demand"]; l.VRAMGB != 48 || !l.Available || l.MaxCount != 0 {
		t.Errorf("mystery-gpu: got vram %v available %v max %d, want 48 from the catalog, available, max unknown (0)", l.VRAMGB, l.Available, l.MaxCount)
	}
	wantRejects := map[string]int{
		listings.RejectDuplicateID: 1,
		listings.RejectBadRow:      5, // "NaN", 1.5 GPUs, a string row, tier "three", gpus "none"
		listings.RejectNegative:    1,
		listings.RejectAboveCap:    1,
		listings.RejectZeroPrice:   2, // 0 and missing
		listings.RejectNoID:        2, // no v0Name, no location id
	}
	if got := rejectCounts(rejects); !reflect.DeepEqual(got, wantRejects) {
		t.Errorf("rejects: got %v, want %v\n%+v", got, wantRejects, rejects)
	}
}

func TestParseTensorDockErrors(t *testing.T) {
	testParseErrors(t, ParseTensorDock, []parseErrorCase{
		{"api error", `{"error":"unauthorized","message":"Invalid API token"}`, "Invalid API token"},
		{"malformed", `{"data":{"locations":[{"id":`, "tensordock: decode response"},
		{"no locations", `{"data":{}}`, "no data.locations"},
		{"locations an object", `{"data":{"locations":{}}}`, "no data.locations"},
		{"data a list", `{"data":[]}`, "tensordock: decode response"},
		{"empty", ``, "tensordock: decode response"},
	})
}

func TestTensorDockCollect(t *testing.T) {
	fix := readJSONFixture(t, tensorDockFixture)
	tests := []struct {
		name    string
		status  int
		body    []byte
		wantErr string
	}{
		{"ok", 200, fix, ""},
		{"not found", 404, []byte(`{"message":"not found"}`), "404"},
		{"html instead of json", 200, []byte(`<html>maintenance</html>`), "tensordock: decode response"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotMethod, gotPath, gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotMethod, gotPath, gotAuth = r.Method, r.URL.Path, r.Header.Get("Authorization")
				w.WriteHeader(tc.status)
				_, _ = w.Write(tc.body)
			}))
			defer srv.Close()
			src, ok := Get("tensordock")
			if !ok {
				t.Fatal("tensordock is not registered")
			}
			res, err := src.Collect(context.Background(), testEnv(srv.URL+"/api/v2/locations", nil))
			if gotMethod != http.MethodGet || gotPath != "/api/v2/locations" || gotAuth != "" {
				t.Errorf("got %s %s auth %q, want GET /api/v2/locations without auth", gotMethod, gotPath, gotAuth)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Collect: %v", err)
			}
			if got := len(res.Listings); got != 13 {
				t.Errorf("got %d listings, want 13", got)
			}
		})
	}
}

func TestJSONSourcesRegistered(t *testing.T) {
	tests := []struct {
		name, url string
		enabled   bool
	}{
		{"runpod", RunPodURL, true},
		{"lambda", LambdaURL, true},
		{"tensordock", TensorDockURL, true},
	}
	for _, tc := range tests {
		src, ok := Get(tc.name)
		if !ok {
			t.Errorf("%s: not registered", tc.name)
			continue
		}
		if got := src.DefaultURL(); got != tc.url {
			t.Errorf("%s: got default URL %q, want %q", tc.name, got, tc.url)
		}
		if got := EnabledByDefault(tc.name); got != tc.enabled {
			t.Errorf("%s: got enabled %v, want %v", tc.name, got, tc.enabled)
		}
	}
	names := Names()
	if !sort.StringsAreSorted(names) {
		t.Errorf("Names() = %q, want sorted", names)
	}
}

func FuzzParseTensorDock(f *testing.F) {
	fuzzJSONParser(f, ParseTensorDock, readJSONFixture(f, tensorDockFixture),
		[]byte(`{"data":{"locations":[{"id":"a","gpus":[{"v0Name":"x-99999999999999999999gb","max_count":-1,"price_per_hr":1e-9},1]}]}}`),
		[]byte(`{"error":"x"}`))
}

func BenchmarkParseTensorDock(b *testing.B) {
	benchJSONParser(b, ParseTensorDock, readJSONFixture(b, tensorDockFixture))
}
