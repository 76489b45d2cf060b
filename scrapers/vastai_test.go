package scrapers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listings-dev/listings"
)

var vastNow = time.Date(2024, 11, 5, 3, 0, 0, 0, time.UTC)

func readFixture(tb testing.TB, parts ...string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "fixtures"}, parts...)...))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func vastFull(tb testing.TB) []byte {
	return readFixture(tb, "vastai", "vast-search-offers-full-2024-11-05.json")
}

// wrapOffers turns the recorded bare array into the API's {"offers": [...]}.
func wrapOffers(arr []byte) []byte {
	return append(append([]byte(`{"offers":`), arr...), '}')
}

func TestParseVastFullRecording(t *testing.T) {
	body := vastFull(t)
	ls, rejects, err := ParseVast(body, vastNow, 0)
	if err != nil {
		t.Fatalf("ParseVast: %v", err)
	}

	// Work out the expectations from the raw JSON, independently of the parser.
	var raw []map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	wantInterruptible, wantBidAbove := 0, 0
	for _, o := range raw {
		if o["min_bid"].(float64) <= o["dph_base"].(float64) {
			wantInterruptible++
		} else {
			wantBidAbove++
		}
	}

	kinds := map[listings.Kind]int{}
	var p4090 []listings.Price
	gpus := map[string]bool{}
	for _, l := range ls {
		kinds[l.Kind]++
		gpus[l.GPU] = true
		if !l.Known {
			t.Errorf("listing %s: GPU %q (raw %q) not in the catalog", l.ID, l.GPU, l.RawGPU)
		}
		if l.Kind == listings.OnDemand && l.GPU == "RTX 4090" {
			p4090 = append(p4090, l.Price)
		}
		if l.Source != "vastai" || l.Currency != listings.USD || !l.Available {
			t.Errorf("listing %s: source %q currency %q available %t", l.ID, l.Source, l.Currency, l.Available)
		}
	}
	sort.Slice(p4090, func(i, j int) bool { return p4090[i] < p4090[j] })
	checks := []struct {
		name      string
		got, want any
	}{
		{"on-demand listings", kinds[listings.OnDemand], len(raw)},
		{"on-demand listings (1,396)", kinds[listings.OnDemand], 1396},
		{"interruptible listings", kinds[listings.Interruptible], wantInterruptible},
		{"RTX 4090 on-demand", len(p4090), 311},
		{"RTX 4090 floor", p4090[0], listings.Price(160000)},
		{"RTX 4090 median", p4090[len(p4090)/2], listings.Price(422186)},
		{"rejects", len(rejects), wantBidAbove},
		{"A100 40GB SXM", gpus["A100 40GB SXM"], true},
		{"A100 80GB SXM", gpus["A100 80GB SXM"], true},
		{"A100 40GB PCIe", gpus["A100 40GB PCIe"], true},
		{"A100 80GB PCIe", gpus["A100 80GB PCIe"], true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, r := range rejects {
		if r.Reason != listings.RejectBidAboveBase {
			t.Errorf("reject %+v: got reason %q, want %q", r, r.Reason, listings.RejectBidAboveBase)
		}
	}
}

func TestParseVastFirstOffer(t *testing.T) {
	// The first recorded offer: 1× RTX 4090, dph_base 0.16, min_bid 0.1,
	// South Korea, reliability2 0.9968.
	var raw []json.RawMessage
	if err := json.Unmarshal(vastFull(t), &raw); err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := json.Unmarshal(raw[0], &o); err != nil {
		t.Fatal(err)
	}
	ls, _, err := ParseVast(append(append([]byte("["), raw[0]...), ']'), vastNow, 0)
	if err != nil || len(ls) == 0 {
		t.Fatalf("ParseVast: %d listings, %v", len(ls), err)
	}
	l := ls[0]
	want := listings.Listing{
		Source: "vastai", ID: "13489095", GPU: "RTX 4090", Known: true, RawGPU: "RTX 4090",
		GPUCount: 1, VRAMGB: 24, Kind: listings.OnDemand, Currency: "USD",
		Listed:       "dph_base=" + num(o["dph_base"].(float64)) + " num_gpus=1",
		Region:       o["geolocation"].(string),
		Reliability:  o["reliability2"].(float64),
		DiskGB:       o["disk_space"].(float64),
		Available:    true,
		Verification: o["verification"].(string),
		Interconnect: "PCIe " + strconv.FormatFloat(o["pci_gen"].(float64), 'f', 1, 64),
	}
	want.Price, _ = listings.PriceFromFloat(o["dph_base"].(float64))
	want.StoragePrice, _ = listings.PriceFromFloat(o["storage_cost"].(float64))
	if l != want {
		t.Errorf("first offer:\n got %+v\nwant %+v", l, want)
	}
}

func TestParseVast2022Single(t *testing.T) {
	// The 2022 record is one bare object; the CLI dump of that era is an array of them.
	one := readFixture(t, "vastai", "vast-offer-2022-single.json")
	ls, rejects, err := ParseVast(append(append([]byte("["), one...), ']'), vastNow, 0)
	if err != nil {
		t.Fatalf("ParseVast: %v", err)
	}
	if len(rejects) != 0 || len(ls) != 2 {
		t.Fatalf("got %d listings, %v rejects; want 2 listings, no rejects", len(ls), rejects)
	}
	od, bid := ls[0], ls[1]
	if od.ID != "5006600" || od.GPU != "RTX 3090" || od.VRAMGB != 24 || od.Price != 320000 ||
		od.Region != "Norway" || od.Reliability != 0.9993718 || od.Interconnect != "PCIe 3.0" ||
		od.Verification != "verified" || od.StoragePrice != 200000 {
		t.Errorf("on-demand: got %+v", od)
	}
	if bid.Kind != listings.Interruptible || bid.Price != 143806 || bid.ID != od.ID {
		t.Errorf("interruptible: got %+v, want id 5006600 price 0.143806", bid)
	}
}

// offer builds a minimal valid offer, with fields overridden by extra.
func offer(id any, extra map[string]any) map[string]any {
	o := map[string]any{
		"id": id, "gpu_name": "RTX 4090", "gpu_ram": 24564.0, "num_gpus": 1,
		"dph_base": 0.4, "min_bid": 0.2, "geolocation": "Texas, US", "reliability2": 0.99,
		"disk_space": 100.0, "storage_cost": 0.15, "verification": "verified",
		"bw_nvlink": 0.0, "pci_gen": 4.0, "rentable": true, "rented": false,
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func TestParseVastBadRows(t *testing.T) {
	offers := []any{
		offer(1, nil), // kept: on-demand and interruptible
		offer(2, map[string]any{"dph_base": "NaN"}),          // bad price
		offer(3, map[string]any{"dph_base": -0.5}),           // negative
		offer(4, map[string]any{"dph_base": 0}),              // zero
		offer(5, map[string]any{"dph_base": 50000.0}),        // above the cap
		offer(6, map[string]any{"num_gpus": 0}),              // zero GPUs
		offer(1, map[string]any{"dph_base": 0.1}),            // duplicate id
		offer(7, map[string]any{"num_gpus": "2"}),            // a string in num_gpus
		offer(8, map[string]any{"min_bid": 0.9}),             // kept; bid above base
		offer(9, map[string]any{"rented": true}),             // not rentable
		offer(10, map[string]any{"gpu_ram": "24GB"}),         // a string where a number belongs
		offer(11, map[string]any{"min_bid": "cheap"}),        // kept; bad bid
		offer(12, map[string]any{"gpu_name": "Voodoo 5500"}), // kept, unknown GPU
		offer(nil, nil), // no id
		"not an object", // malformed row
		offer(13, map[string]any{"num_gpus": 4.0, "dph_base": 2.0, "min_bid": 1.0, "bw_nvlink": 100.0}),
	}
	body, _ := json.Marshal(map[string]any{"offers": offers})
	ls, rejects, err := ParseVast(body, vastNow, 0)
	if err != nil {
		t.Fatalf("ParseVast: %v", err)
	}
	got := map[string]string{}
	for _, l := range ls {
		got[l.ID+" "+string(l.Kind)] = l.Price.String()
	}
	want := map[string]string{
		"1 on-demand": "0.400000", "1 interruptible": "0.200000",
		"8 on-demand":  "0.400000",
		"11 on-demand": "0.400000",
		"12 on-demand": "0.400000", "12 interruptible": "0.200000",
		"13 on-demand": "0.500000", "13 interruptible": "0.250000",
	}
	if len(got) != len(want) {
		t.Errorf("listings: got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("listing %s: got price %q, want %q", k, got[k], v)
		}
	}
	gotRej := map[string]string{}
	for _, r := range rejects {
		if r.ID == "" {
			// The offer without an id and the row that is not an object.
			gotRej[r.ID] += r.Reason + ";"
			continue
		}
		if _, dup := gotRej[r.ID]; dup {
			t.Errorf("offer %q rejected twice: %v", r.ID, rejects)
		}
		gotRej[r.ID] = r.Reason
	}
	wantRej := map[string]string{
		"2": listings.RejectBadPrice, "3": listings.RejectNegative, "4": listings.RejectZeroPrice,
		"5": listings.RejectAboveCap, "6": listings.RejectZeroGPUs, "1": listings.RejectDuplicateID,
		"7": listings.RejectBadRow, "8": listings.RejectBidAboveBase, "9": RejectNotRentable,
		"10": listings.RejectBadRow, "11": listings.RejectBadPrice,
		"": listings.RejectNoID + ";" + listings.RejectBadRow + ";",
	}
	for id, reason := range wantRej {
		if gotRej[id] != reason {
			t.Errorf("offer %q: got reject %q, want %q", id, gotRej[id], reason)
		}
	}
	// "" holds both the missing id and the malformed row: count them.
	if len(rejects) != len(wantRej)+1 {
		t.Errorf("rejects: got %d %v, want %d", len(rejects), rejects, len(wantRej)+1)
	}
	for _, l := range ls {
		switch l.ID {
		case "12":
			if l.Known || l.GPU != "Voodoo 5500" {
				t.Errorf("unknown GPU: got GPU %q known %t, want kept as-is and unknown", l.GPU, l.Known)
			}
		case "13":
			if l.GPUCount != 4 || l.Interconnect != "NVLink" {
				t.Errorf("offer 13: got %d GPUs, interconnect %q; want 4, NVLink", l.GPUCount, l.Interconnect)
			}
		}
	}
}

func TestParseVastTopLevel(t *testing.T) {
	full := vastFull(t)
	tests := []struct {
		name    string
		body    string
		wantErr string
		want    int
	}{
		{"offers object", `{"offers":[{"id":1,"gpu_name":"RTX 3090","gpu_ram":24576,"num_gpus":1,"dph_base":0.2}]}`, "", 1},
		{"bare array", `[{"id":1,"gpu_name":"RTX 3090","gpu_ram":24576,"num_gpus":1,"dph_base":0.2}]`, "", 1},
		{"empty offers", `{"offers":[]}`, "", 0},
		{"truncated recording", string(full[:len(full)/2]), "decode offers", 0},
		{"truncated object", `{"offers":[{"id":1,"gpu_name":"RTX 30`, "decode offers", 0},
		{"error object", `{"success":false,"error":"invalid_args","msg":"bad query"}`, "no offers: \"bad query\"", 0},
		{"html", `<html>502 Bad Gateway</html>`, "not JSON", 0},
		{"empty", ``, "empty response", 0},
		{"offers not a list", `{"offers":7}`, "decode offers", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls, _, err := ParseVast([]byte(tt.body), vastNow, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(ls) != tt.want {
				t.Fatalf("got %d listings, error %v; want %d, nil", len(ls), err, tt.want)
			}
		})
	}
}

// fastClient is a client configuration for tests: its own host gate, no
// host delay, millisecond backoff.
func fastClient() ClientOptions {
	return ClientOptions{
		UserAgent:   UserAgent("test", "https://example.org/contact"),
		Hosts:       NewHosts(),
		HostDelay:   -1,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
	}
}

func TestCollectVast(t *testing.T) {
	full := wrapOffers(vastFull(t))
	var hits atomic.Int32
	var gotReq struct {
		method, ua, auth, ctype string
		query                   map[string]any
	}
	var serveMu sync.Mutex
	serveFn := func(w http.ResponseWriter, r *http.Request) {}
	setServe := func(f func(w http.ResponseWriter, r *http.Request)) {
		serveMu.Lock()
		serveFn = f
		serveMu.Unlock()
	}
	serve := func(w http.ResponseWriter, r *http.Request) {
		serveMu.Lock()
		f := serveFn
		serveMu.Unlock()
		f(w, r)
	}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		serve(w, r)
	}))
	defer srv.Close()
	defer close(stop)

	t.Run("ok", func(t *testing.T) {
		setServe(func(w http.ResponseWriter, r *http.Request) {
			gotReq.method, gotReq.ua, gotReq.auth = r.Method, r.UserAgent(), r.Header.Get("Authorization")
			gotReq.ctype = r.Header.Get("Content-Type")
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &gotReq.query)
			w.Write(full)
		})
		run, ls := Collect(context.Background(), Vast{}, RunOptions{
			URL: srv.URL, Now: vastNow, Client: fastClient(),
			Getenv: func(k string) string { return map[string]string{"VAST_API_KEY": "k-123"}[k] },
		})
		if run.Status != listings.RunOK || run.Error != "" {
			t.Fatalf("run: got %s %q, want ok", run.Status, run.Error)
		}
		if run.Listings != 1396+1167 || len(ls) != run.Listings {
			t.Errorf("listings: got %d (%d returned), want %d", run.Listings, len(ls), 1396+1167)
		}
		if got := run.Rejects[listings.RejectBidAboveBase]; got != 229 || run.Rejected() != 229 {
			t.Errorf("rejects: got %v, want 229 %q", run.Rejects, listings.RejectBidAboveBase)
		}
		if run.Pages != 1 || run.Bytes != int64(len(full)) || run.Retries != 0 {
			t.Errorf("http facts: got pages %d bytes %d retries %d, want 1, %d, 0", run.Pages, run.Bytes, run.Retries, len(full))
		}
		if !run.Started.Equal(vastNow) || run.Finished.Before(run.Started) || run.Source != "vastai" {
			t.Errorf("run times: got %s..%s source %q", run.Started, run.Finished, run.Source)
		}
		if len(run.Unknown) != 0 {
			t.Errorf("unknown GPUs: got %v, want none", run.Unknown)
		}
		if gotReq.method != http.MethodPost || gotReq.ua != "listings/test (+https://example.org/contact)" ||
			gotReq.auth != "Bearer k-123" || gotReq.ctype != "application/json" {
			t.Errorf("request: got %+v", gotReq)
		}
		want := map[string]any{"rentable": map[string]any{"eq": true}, "rented": map[string]any{"eq": false}, "type": "on-demand", "limit": 5000.0}
		gb, _ := json.Marshal(gotReq.query)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("query: got %s, want %s", gb, wb)
		}
	})

	t.Run("limit option and no key", func(t *testing.T) {
		setServe(func(w http.ResponseWriter, r *http.Request) {
			gotReq.auth = r.Header.Get("Authorization")
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &gotReq.query)
			w.Write(full)
		})
		run, _ := Collect(context.Background(), Vast{}, RunOptions{
			URL: srv.URL, Client: fastClient(), Options: map[string]any{"limit": int64(300)},
			Getenv: func(string) string { return "" },
		})
		if run.Status != listings.RunOK || gotReq.query["limit"] != 300.0 || gotReq.auth != "" {
			t.Errorf("got status %s, limit %v, auth %q; want ok, 300, none", run.Status, gotReq.query["limit"], gotReq.auth)
		}
	})

	failures := []struct {
		name        string
		serve       func(w http.ResponseWriter, r *http.Request)
		opts        func(*RunOptions)
		wantErr     string
		wantHits    int32
		wantRetries int
	}{
		{
			name:     "http 500 after retries",
			serve:    func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
			wantErr:  "HTTP 500 Internal Server Error (after 3 retries)",
			wantHits: 4, wantRetries: 3,
		},
		{
			name: "hang past the timeout",
			serve: func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body) // so the server notices the client hang up
				select {
				case <-r.Context().Done():
				case <-stop:
				}
			},
			opts:     func(o *RunOptions) { o.Timeout = 100 * time.Millisecond },
			wantErr:  "timeout after 100ms",
			wantHits: 1,
		},
		{
			name:     "truncated body",
			serve:    func(w http.ResponseWriter, r *http.Request) { w.Write(full[:len(full)-100]) },
			wantErr:  "vastai: decode offers",
			wantHits: 1,
		},
		{
			name:     "oversized body",
			serve:    func(w http.ResponseWriter, r *http.Request) { w.Write(full) },
			opts:     func(o *RunOptions) { o.Client.MaxBodyBytes = 1 << 20 },
			wantErr:  "response larger than the 1048576-byte limit",
			wantHits: 1,
		},
		{
			name:     "zero listings",
			serve:    func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"offers":[]}`)) },
			wantErr:  Msg0Listings,
			wantHits: 1,
		},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			setServe(tt.serve)
			o := RunOptions{URL: srv.URL, Now: vastNow, Client: fastClient()}
			if tt.opts != nil {
				tt.opts(&o)
			}
			run, ls := Collect(context.Background(), Vast{}, o)
			if run.Status != listings.RunFailed || !strings.Contains(run.Error, tt.wantErr) {
				t.Errorf("run: got %s %q, want failed with %q", run.Status, run.Error, tt.wantErr)
			}
			if ls != nil || run.Listings != 0 {
				t.Errorf("failed run: got %d listings, want none", len(ls))
			}
			if hits.Load() != tt.wantHits || run.Retries != tt.wantRetries {
				t.Errorf("got %d requests, %d retries; want %d, %d", hits.Load(), run.Retries, tt.wantHits, tt.wantRetries)
			}
		})
	}
}

func BenchmarkParseVast(b *testing.B) {
	body := vastFull(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseVast(body, vastNow, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseVast(f *testing.F) {
	one := readFixture(f, "vastai", "vast-offer-2022-single.json")
	f.Add(append(append([]byte("["), one...), ']'))
	f.Add(append(append([]byte(`{"offers":[`), one...), []byte("]}")...))
	var raw []json.RawMessage
	if err := json.Unmarshal(vastFull(f), &raw); err != nil {
		f.Fatal(err)
	}
	for _, i := range []int{0, 1, 500, len(raw) - 1} {
		f.Add(append(append([]byte("["), raw[i]...), ']'))
	}
	f.Add([]byte(`{"offers":[{"id":1e21,"gpu_name":"A100 SXM4","gpu_ram":81920,"num_gpus":8.0,"dph_base":1e300,"min_bid":-1}]}`))
	f.Add([]byte(`[{"id":"x","num_gpus":"NaN"},null,[],{"id":2,"dph_base":0.1,"num_gpus":1,"gpu_name":"RTX 4090","rented":"no"}]`))
	f.Add([]byte(`{"offers":[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ls, _, err := ParseVast(body, vastNow, 0)
		if err != nil && ls != nil {
			t.Fatalf("error %v with %d listings", err, len(ls))
		}
		seen := map[string]bool{}
		for _, l := range ls {
			if l.Price <= 0 || l.Price > DefaultPriceCap || l.GPUCount <= 0 || l.ID == "" {
				t.Fatalf("absurd listing kept: %+v", l)
			}
			if seen[l.Key()] {
				t.Fatalf("duplicate listing %q %s", l.ID, l.Kind)
			}
			seen[l.Key()] = true
		}
	})
}

func TestParseVastNights(t *testing.T) {
	tests := []struct {
		file            string
		offers, n4090   int
		floor           listings.Price
		hasFloorGone    bool
		repricedH100SXM listings.Price
	}{
		{"night1.json", 238, 63, 166667, false, 2133333},
		{"night2.json", 242, 64, 160000, true, 2133333},
		{"night3.json", 238, 63, 166667, false, 2346700},
		{"night4.json", 240, 63, 166667, false, 2346700},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ls, _, err := ParseVast(readFixture(t, "vastai", tt.file), vastNow, 0)
			if err != nil {
				t.Fatal(err)
			}
			od, n4090, floor, gone, hyper := 0, 0, listings.Price(0), false, false
			var repriced listings.Price
			for _, l := range ls {
				if l.Kind != listings.OnDemand {
					continue
				}
				od++
				if l.GPU == "RTX 4090" {
					n4090++
					if floor == 0 || l.Price < floor {
						floor = l.Price
					}
				}
				gone = gone || l.ID == "13424436"
				hyper = hyper || l.Region == `=HYPERLINK("http://x","y")`
				if l.ID == "12848117" {
					repriced = l.Price
				}
			}
			if od != tt.offers || n4090 != tt.n4090 || floor != tt.floor || gone != tt.hasFloorGone || !hyper || repriced != tt.repricedH100SXM {
				t.Errorf("got %d on-demand, %d RTX 4090, floor %s, floor offer %t, hyperlink %t, repriced %s; want %d, %d, %s, %t, true, %s",
					od, n4090, floor, gone, hyper, repriced, tt.offers, tt.n4090, tt.floor, tt.hasFloorGone, tt.repricedH100SXM)
			}
		})
	}
}

// TestParseVastDuplicateAfterReject: of duplicate ids the first is the one
// kept, even when it is rejected: a later copy never takes its place.
func TestParseVastDuplicateAfterReject(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"offers": []any{
		offer(14, map[string]any{"dph_base": -1.0}),
		offer(14, map[string]any{"dph_base": 0.3}),
	}})
	ls, rejects, err := ParseVast(body, vastNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 0 {
		t.Errorf("listings %+v: the second copy of a rejected offer was kept", ls)
	}
	if len(rejects) != 2 || rejects[0].Reason != listings.RejectNegative || rejects[1].Reason != listings.RejectDuplicateID {
		t.Errorf("rejects = %+v, want negative price then duplicate id", rejects)
	}
}
