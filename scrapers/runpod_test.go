package scrapers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/listings-dev/listings"
)

const runPodRecording = "runpod/runpod-graphql-gputypes-full-2025-06-21.json"

// readJSONFixture reads a file under the module's fixtures/ folder.
func readJSONFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", filepath.FromSlash(name)))
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	return b
}

// listingByKey indexes listings by "id|kind".
func listingByKey(ls []listings.Listing) map[string]listings.Listing {
	m := make(map[string]listings.Listing, len(ls))
	for _, l := range ls {
		m[l.ID+"|"+string(l.Kind)] = l
	}
	return m
}

// rejectCounts counts rejects per reason.
func rejectCounts(rs []listings.Reject) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.Reason]++
	}
	return m
}

// mustPrice parses a decimal price in a test.
func mustPrice(tb testing.TB, s string) listings.Price {
	tb.Helper()
	p, err := listings.ParsePrice(s)
	if err != nil {
		tb.Fatalf("ParsePrice(%q): %v", s, err)
	}
	return p
}

// checkParsed asserts the invariants every parse result keeps, whatever
// the input: ids present, (id, kind) unique, prices in (0, cap], counts sane.
func checkParsed(tb testing.TB, ls []listings.Listing, limit listings.Price) {
	tb.Helper()
	seen := map[string]bool{}
	for _, l := range ls {
		if l.ID == "" {
			tb.Fatalf("listing without id: %+v", l)
		}
		if seen[l.Key()] {
			tb.Fatalf("duplicate listing %q %s", l.ID, l.Kind)
		}
		seen[l.Key()] = true
		if l.Price <= 0 || l.Price > limit {
			tb.Fatalf("listing %q price %s outside (0, %s]", l.ID, l.Price, limit)
		}
		if l.GPUCount < 1 || l.MaxCount < 0 || l.VRAMGB < 0 || l.DiskGB < 0 {
			tb.Fatalf("listing %q: gpus %d max %d vram %v disk %v", l.ID, l.GPUCount, l.MaxCount, l.VRAMGB, l.DiskGB)
		}
		if l.Currency != listings.USD || l.Kind == "" {
			tb.Fatalf("listing %q: currency %q kind %q", l.ID, l.Currency, l.Kind)
		}
	}
}

// testEnv is an Env for collecting from url with the given environment.
func testEnv(url string, vars map[string]string) *Env {
	return &Env{
		URL:      url,
		Client:   NewClient(ClientOptions{}),
		Getenv:   func(k string) string { return vars[k] },
		PriceCap: DefaultPriceCap,
	}
}

func TestParseRunPodRecording(t *testing.T) {
	ls, rejects, err := ParseRunPod(readJSONFixture(t, runPodRecording), DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseRunPod: %v", err)
	}
	checkParsed(t, ls, DefaultPriceCap)
	byKey := listingByKey(ls)

	const (
		od = listings.OnDemand
		ir = listings.Interruptible
	)
	prices := []struct {
		id    string
		kind  listings.Kind
		gpu   string
		price string // "" = no such listing
	}{
		{"NVIDIA GeForce RTX 4090/secure", od, "RTX 4090", "0.69"},
		{"NVIDIA GeForce RTX 4090/community", od, "RTX 4090", "0.34"},
		{"NVIDIA GeForce RTX 4090/secure", ir, "RTX 4090", "0.35"},
		{"NVIDIA GeForce RTX 4090/community", ir, "RTX 4090", "0.20"},
		// secureCloud false: its securePrice 0.46 is a placeholder.
		{"NVIDIA GeForce RTX 3090 Ti/secure", od, "", ""},
		{"NVIDIA GeForce RTX 3090 Ti/community", od, "RTX 3090 Ti", "0.27"},
		{"NVIDIA GeForce RTX 3090 Ti/community", ir, "RTX 3090 Ti", "0.14"},
		{"NVIDIA H100 80GB HBM3/secure", od, "H100 SXM", "2.99"},
		{"NVIDIA H100 80GB HBM3/community", od, "H100 SXM", "2.69"},
		// communityCloud false despite communityPrice 0.5.
		{"AMD Instinct MI300X OAM/secure", od, "MI300X", "2.49"},
		{"AMD Instinct MI300X OAM/community", od, "", ""},
		{"NVIDIA B200/secure", od, "B200", "6.39"},
		{"NVIDIA B200/community", od, "", ""},
		// Spot price null: no interruptible listing.
		{"NVIDIA B200/secure", ir, "", ""},
		// secureCloud false with securePrice 0: not offered, not a reject.
		{"NVIDIA GeForce RTX 3070/secure", od, "", ""},
		{"NVIDIA A100-SXM4-80GB/secure", od, "A100 80GB SXM", "1.74"},
		{"NVIDIA A100 80GB PCIe/community", ir, "A100 80GB PCIe", "0.60"},
		{"Tesla V100-SXM2-32GB/community", od, "V100 32GB", "0.33"},
		{"NVIDIA RTX PRO 6000 Blackwell Workstation Edition/secure", od, "RTX PRO 6000", "1.79"},
	}
	for _, tc := range prices {
		l, ok := byKey[tc.id+"|"+string(tc.kind)]
		if tc.price == "" {
			if ok {
				t.Errorf("%s %s: got a listing at %s, want none", tc.id, tc.kind, l.Price.Decimal())
			}
			continue
		}
		if !ok {
			t.Errorf("%s %s: got no listing, want %s", tc.id, tc.kind, tc.price)
			continue
		}
		if got, want := l.Price, mustPrice(t, tc.price); got != want {
			t.Errorf("%s %s: got price %s, want %s", tc.id, tc.kind, got.Decimal(), want.Decimal())
		}
		if l.GPU != tc.gpu || !l.Known {
			t.Errorf("%s: got gpu %q known %v, want %q known", tc.id, l.GPU, l.Known, tc.gpu)
		}
	}

	l := byKey["NVIDIA GeForce RTX 4090/secure|on-demand"]
	want := listings.Listing{
		Source: "runpod", ID: "NVIDIA GeForce RTX 4090/secure", GPU: "RTX 4090", Known: true,
		RawGPU: "NVIDIA GeForce RTX 4090", GPUCount: 1, VRAMGB: 24, Kind: od,
		Price: mustPrice(t, "0.69"), Currency: "USD", Listed: "securePrice=0.69",
		Region: "secure", Reliability: -1, Available: true, MaxCount: 9,
	}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("RTX 4090 secure on-demand:\n got %+v\nwant %+v", l, want)
	}

	for _, l := range ls {
		if strings.Contains(strings.ToLower(l.ID), "unknown") || !l.Known {
			t.Errorf("got listing %q gpu %q known %v: want no placeholder and every GPU known", l.ID, l.GPU, l.Known)
		}
	}
	if got, want := rejectCounts(rejects), map[string]int{rejectPlaceholder: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("got rejects %v, want %v", got, want)
	}
	// 38 real GPU types; counted by hand from the recording's flags and
	// non-null prices.
	if got, want := len(ls), 103; got != want {
		t.Errorf("got %d listings, want %d", got, want)
	}
}

func TestParseRunPodEnvelope(t *testing.T) {
	rec := readJSONFixture(t, runPodRecording)
	bare, _, err := ParseRunPod(rec, DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseRunPod(bare): %v", err)
	}
	wrapped := []byte(`{"data":{"gpuTypes":` + string(rec) + `}}`)
	got, _, err := ParseRunPod(wrapped, DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseRunPod(envelope): %v", err)
	}
	if !reflect.DeepEqual(got, bare) {
		t.Errorf("envelope and bare array differ: got %d listings, want %d", len(got), len(bare))
	}
	for _, errs := range []string{`null`, `[]`} {
		body := []byte(`{"errors":` + errs + `,"data":{"gpuTypes":` + string(rec) + `}}`)
		got, _, err := ParseRunPod(body, DefaultPriceCap)
		if err != nil || len(got) != len(bare) {
			t.Errorf("errors %s: got %d listings, error %v; want %d, no error", errs, len(got), err, len(bare))
		}
	}
}

func TestParseRunPodBadRows(t *testing.T) {
	body := `[
	 {"id":"NVIDIA GeForce RTX 4090","memoryInGb":24,"maxGpuCount":8,"secureCloud":true,"communityCloud":true,
	  "securePrice":0.69,"communityPrice":0.34,"secureSpotPrice":0.35,"communitySpotPrice":null},
	 {"id":"NVIDIA GeForce RTX 4090","memoryInGb":24,"maxGpuCount":8,"secureCloud":true,"communityCloud":false,
	  "securePrice":0.70,"communityPrice":0.30},
	 {"id":"NVIDIA A40","memoryInGb":48,"secureCloud":true,"communityCloud":true,"securePrice":"NaN","communityPrice":0.35},
	 {"id":"NVIDIA L40","memoryInGb":48,"secureCloud":true,"communityCloud":true,"securePrice":-0.99,"secureSpotPrice":0.5,"communityPrice":0.69},
	 {"id":"NVIDIA H200","memoryInGb":141,"secureCloud":true,"communityCloud":false,"securePrice":1000000,"secureSpotPrice":1.2},
	 {"id":"NVIDIA L4","memoryInGb":24,"secureCloud":true,"communityCloud":true,"securePrice":0,"secureSpotPrice":0.22,"communityPrice":0.44,"communitySpotPrice":0},
	 {"id":"NVIDIA A30","memoryInGb":"24","secureCloud":true,"securePrice":0.41},
	 {"id":"NVIDIA L40S","memoryInGb":48,"maxGpuCount":2.5,"secureCloud":true,"securePrice":0.86},
	 {"id":"Mystery GPU 9000","memoryInGb":64,"secureCloud":true,"securePrice":1.5},
	 {"id":"","displayName":"nameless","secureCloud":true,"securePrice":0.5},
	 {"id":"unknown","displayName":"unknown","memoryInGb":0,"secureCloud":false,"communityCloud":false,"securePrice":0,"communityPrice":0},
	 42,
	 {"id":"NVIDIA RTX A6000","memoryInGb":48,"secureCloud":"yes","securePrice":0.49}
	]`
	ls, rejects, err := ParseRunPod([]byte(body), DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseRunPod: %v", err)
	}
	checkParsed(t, ls, DefaultPriceCap)
	var got []string
	for _, l := range ls {
		got = append(got, l.ID+" "+string(l.Kind)+" "+l.Price.Decimal())
	}
	want := []string{
		"NVIDIA GeForce RTX 4090/secure on-demand 0.69", // the first of two rows with one id
		"NVIDIA GeForce RTX 4090/secure interruptible 0.35",
		"NVIDIA GeForce RTX 4090/community on-demand 0.34",
		"NVIDIA L40/community on-demand 0.69", // the bad secure price leaves the community cloud
		"NVIDIA L4/community on-demand 0.44",
		"Mystery GPU 9000/secure on-demand 1.50",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listings:\n got %q\nwant %q", got, want)
	}
	if l := listingByKey(ls)["Mystery GPU 9000/secure|on-demand"]; l.Known || l.GPU != "Mystery GPU 9000" {
		t.Errorf("unknown GPU: got gpu %q known %v, want the raw name kept, unknown", l.GPU, l.Known)
	}
	wantRejects := map[string]int{
		listings.RejectDuplicateID: 1, // the second RTX 4090 row's secure on-demand
		listings.RejectBadRow:      5, // "NaN", "24", 2.5 GPUs, a number, "yes"
		listings.RejectNegative:    1, // L40 secure (its spot is dropped with it)
		listings.RejectAboveCap:    1, // H200 secure (its spot too)
		listings.RejectZeroPrice:   2, // L4 secure 0 under an enabled cloud, L4 community spot 0
		listings.RejectNoID:        1,
		rejectPlaceholder:          1,
	}
	if got := rejectCounts(rejects); !reflect.DeepEqual(got, wantRejects) {
		t.Errorf("rejects: got %v, want %v\n%+v", got, wantRejects, rejects)
	}
}

func TestParseRunPodErrors(t *testing.T) {
	testParseErrors(t, ParseRunPod, []parseErrorCase{
		{"graphql errors", `{"errors":[{"message":"Cannot query field \"foo\" on type \"GpuType\"."},{"message":"second"}]}`, `Cannot query field "foo" on type "GpuType".; second`},
		{"errors with partial data", `{"data":{"gpuTypes":[]},"errors":[{"message":"rate limited"}]}`, "rate limited"},
		{"errors not a list", `{"errors":"boom"}`, "boom"},
		{"malformed json", `{"data":{"gpuTypes":[`, "runpod: decode response"},
		{"truncated array", `[{"id":"x"}`, "runpod: decode gpu types"},
		{"no data", `{}`, "no data.gpuTypes"},
		{"null gpu types", `{"data":{"gpuTypes":null}}`, "no data.gpuTypes"},
		{"gpu types not a list", `{"data":{"gpuTypes":{"id":"x"}}}`, "runpod: decode data.gpuTypes"},
		{"a string", `"hello"`, "runpod: decode response"},
		{"empty", ``, "runpod: decode response"},
	})
}

func TestRunPodCollect(t *testing.T) {
	rec := readJSONFixture(t, runPodRecording)
	envelope := []byte(`{"data":{"gpuTypes":` + string(rec) + `}}`)
	const key = "rp-secret-key-123"
	tests := []struct {
		name       string
		vars       map[string]string
		status     int
		body       []byte
		wantAuth   string
		wantErr    string // "" = success
		wantListed int
	}{
		{"with key", map[string]string{"RUNPOD_API_KEY": key}, 200, envelope, "Bearer " + key, "", 103},
		{"without key", nil, 200, envelope, "", "", 103},
		{"graphql error on 400", map[string]string{"RUNPOD_API_KEY": key}, 400,
			[]byte(`{"errors":[{"message":"Syntax Error: Unexpected Name \"gpuTypez\""}]}`), "Bearer " + key,
			`Syntax Error: Unexpected Name "gpuTypez"`, 0},
		{"graphql error on 200", nil, 200, []byte(`{"errors":[{"message":"internal error"}],"data":null}`), "", "internal error", 0},
		{"unauthorised", map[string]string{"RUNPOD_API_KEY": key}, 401, []byte(`unauthorised`), "Bearer " + key, "401", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotMethod, gotPath, gotAuth, gotType string
			var gotBody map[string]string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotMethod, gotPath, gotAuth, gotType = r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type")
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &gotBody)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write(tc.body)
			}))
			defer srv.Close()
			src, ok := Get("runpod")
			if !ok {
				t.Fatal("runpod is not registered")
			}
			res, err := src.Collect(context.Background(), testEnv(srv.URL+"/graphql", tc.vars))
			if gotMethod != http.MethodPost || gotPath != "/graphql" || gotType != "application/json" {
				t.Errorf("got %s %s (%s), want POST /graphql (application/json)", gotMethod, gotPath, gotType)
			}
			if q := gotBody["query"]; !strings.Contains(q, "gpuTypes") || !strings.Contains(q, "communitySpotPrice") {
				t.Errorf("got query %q, want the gpuTypes query", q)
			}
			if gotAuth != tc.wantAuth {
				t.Errorf("got Authorization %q, want %q", gotAuth, tc.wantAuth)
			}
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("got no error, want one containing %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got error %q, want it to contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), key) {
					t.Errorf("error %q reveals the API key", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Collect: %v", err)
			}
			if got := len(res.Listings); got != tc.wantListed {
				t.Errorf("got %d listings, want %d", got, tc.wantListed)
			}
			if got := rejectCounts(res.Rejects)[rejectPlaceholder]; got != 1 {
				t.Errorf("got %d placeholder rejects, want 1", got)
			}
		})
	}
}

func FuzzParseRunPod(f *testing.F) {
	rec := readJSONFixture(f, runPodRecording)
	fuzzJSONParser(f, ParseRunPod, rec,
		[]byte(`{"data":{"gpuTypes":`+string(rec)+`}}`),
		[]byte(`{"errors":[{"message":"x"}]}`),
		[]byte(`[{"id":"NVIDIA L4","secureCloud":true,"securePrice":0,"secureSpotPrice":0.2,"maxGpuCount":-1},42,null]`))
}

func BenchmarkParseRunPod(b *testing.B) {
	benchJSONParser(b, ParseRunPod, readJSONFixture(b, runPodRecording))
}

func TestNormalizeGPU(t *testing.T) {
	long := strings.Repeat("rtx 4090 ", 20000) // 180 kB of "name"
	tests := []struct {
		name      string
		vram      float64
		names     []string
		wantGPU   string
		wantKnown bool
	}{
		{"first known", 80, []string{"NVIDIA H100 80GB HBM3", "H100 SXM"}, "H100 SXM", true},
		{"second known", 24, []string{"weird-id-42", "RTX 4090"}, "RTX 4090", true},
		{"none known keeps the first", 0, []string{"", "Z900", "Z901"}, "Z900", false},
		{"too long is not normalised", 24, []string{long}, clipText(long, maxGPUName), false},
		{"too long falls through to the next", 24, []string{long, "RTX 4090"}, "RTX 4090", true},
		{"nothing", 0, []string{"", " "}, "", false},
	}
	for _, tc := range tests {
		gpu, known := normalizeGPU(tc.vram, tc.names...)
		if gpu != tc.wantGPU || known != tc.wantKnown {
			t.Errorf("%s: got %.40q %v, want %.40q %v", tc.name, gpu, known, tc.wantGPU, tc.wantKnown)
		}
		if len(gpu) > maxGPUName+len("…") {
			t.Errorf("%s: got a %d-byte name, want at most %d", tc.name, len(gpu), maxGPUName)
		}
	}
}
