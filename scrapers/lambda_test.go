package scrapers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/listings-dev/listings"
)

const lambdaRecording = "lambda/lambda-instance-types.json"

func TestParseLambdaRecording(t *testing.T) {
	ls, rejects, err := ParseLambda(readJSONFixture(t, lambdaRecording), DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseLambda: %v", err)
	}
	checkParsed(t, ls, DefaultPriceCap)
	byKey := listingByKey(ls)
	tests := []struct {
		id     string
		gpu    string
		count  int
		vram   float64
		price  string
		avail  bool
		region string
	}{
		{"gpu_8x_h100_sxm5", "H100 SXM", 8, 80, "2.99", true, "us-west-3,us-south-2,us-south-3"},
		{"gpu_4x_h100_sxm5", "H100 SXM", 4, 80, "3.09", true, "us-south-2,us-south-3"},
		{"gpu_2x_h100_sxm5", "H100 SXM", 2, 80, "3.19", true, "us-south-2,us-south-3"},
		{"gpu_1x_h100_sxm5", "H100 SXM", 1, 80, "3.29", true, "us-south-2,us-south-3"},
		{"gpu_1x_h100_pcie", "H100 PCIe", 1, 80, "2.49", true, "us-west-3"},
		{"gpu_8x_b200_sxm6", "B200", 8, 180, "4.99", true, "australia-east-1,us-east-1"},
		{"gpu_1x_a100", "A100 40GB PCIe", 1, 40, "1.29", false, ""},
		{"gpu_2x_a100", "A100 40GB PCIe", 2, 40, "1.29", false, ""},
		{"gpu_4x_a100", "A100 40GB PCIe", 4, 40, "1.29", false, ""},
		{"gpu_1x_a100_sxm4", "A100 40GB SXM", 1, 40, "1.29", true, "us-east-1,us-west-2,asia-south-1"},
		{"gpu_8x_a100_80gb_sxm4", "A100 80GB SXM", 8, 80, "1.79", true, "us-midwest-1,us-east-1,australia-east-1"},
		{"gpu_1x_gh200", "GH200", 1, 96, "1.49", false, ""},
		{"gpu_1x_rtx6000", "Quadro RTX 6000", 1, 24, "0.50", false, ""},
		{"gpu_4x_a6000", "RTX A6000", 4, 48, "0.80", false, ""},
		{"gpu_8x_v100", "V100 16GB", 8, 16, "0.55", false, ""},
		{"gpu_1x_a10", "A10", 1, 24, "0.75", true, "us-east-1,us-west-1"},
	}
	for _, tc := range tests {
		l, ok := byKey[tc.id+"|on-demand"]
		if !ok {
			t.Errorf("%s: no listing", tc.id)
			continue
		}
		if got, want := l.Price, mustPrice(t, tc.price); got != want {
			t.Errorf("%s: got price %s, want %s", tc.id, got.Decimal(), want.Decimal())
		}
		if l.GPU != tc.gpu || !l.Known || l.GPUCount != tc.count || l.VRAMGB != tc.vram {
			t.Errorf("%s: got %q known %v %dx %v GB, want %q known %dx %v GB", tc.id, l.GPU, l.Known, l.GPUCount, l.VRAMGB, tc.gpu, tc.count, tc.vram)
		}
		if l.Available != tc.avail || l.Region != tc.region {
			t.Errorf("%s: got available %v region %q, want %v %q", tc.id, l.Available, l.Region, tc.avail, tc.region)
		}
	}
	want := listings.Listing{
		Source: "lambda", ID: "gpu_8x_h100_sxm5", GPU: "H100 SXM", Known: true,
		RawGPU: "H100 (80 GB SXM5)", GPUCount: 8, VRAMGB: 80, Kind: listings.OnDemand,
		Price: mustPrice(t, "2.99"), Currency: "USD", Listed: "price_cents_per_hour=2392 gpus=8",
		Region: "us-west-3,us-south-2,us-south-3", Reliability: -1, DiskGB: 22528,
		Available: true, Interconnect: "SXM5",
	}
	if got := byKey["gpu_8x_h100_sxm5|on-demand"]; !reflect.DeepEqual(got, want) {
		t.Errorf("gpu_8x_h100_sxm5:\n got %+v\nwant %+v", got, want)
	}
	if got, want := len(ls), 19; got != want {
		t.Errorf("got %d listings, want %d (20 types less the CPU one)", got, want)
	}
	wantRejects := []listings.Reject{{ID: "cpu_4x_general", Reason: listings.RejectZeroGPUs, Detail: "4x CPU General (16 GiB)"}}
	if !reflect.DeepEqual(rejects, wantRejects) {
		t.Errorf("rejects: got %+v, want %+v", rejects, wantRejects)
	}
	// The server's order is kept.
	if ls[0].ID != "gpu_1x_gh200" || ls[len(ls)-1].ID != "gpu_8x_v100" {
		t.Errorf("order: got first %q last %q, want the document's gpu_1x_gh200 … gpu_8x_v100", ls[0].ID, ls[len(ls)-1].ID)
	}
}

// lambdaTypeJSON makes one instance type entry for hand-made responses.
func lambdaTypeJSON(desc, price, gpus, regions string) string {
	return `{"instance_type":{"name":"x","description":"` + desc + `","gpu_description":"","price_cents_per_hour":` + price +
		`,"specs":{"vcpus":26,"memory_gib":225,"storage_gib":2816,"gpus":` + gpus + `}},"regions_with_capacity_available":` + regions + `}`
}

func TestParseLambdaBadRows(t *testing.T) {
	us := `[{"name":"us-east-1","description":"Virginia, USA"}]`
	body := `{"data":{` +
		`"gpu_1x_h100_sxm5":` + lambdaTypeJSON("1x H100 (80 GB SXM5)", "329", "1", us) + `,` +
		`"gpu_1x_h100_sxm5":` + lambdaTypeJSON("1x H100 (80 GB SXM5)", "199", "1", us) + `,` +
		`"gpu_10x_rtx4090":` + lambdaTypeJSON("10x RTX 4090 (24 GB)", "500", "10", `[]`) + `,` +
		`"gpu_nan":` + lambdaTypeJSON("1x A10 (24 GB PCIe)", `"NaN"`, "1", us) + `,` +
		`"gpu_negative":` + lambdaTypeJSON("1x A10 (24 GB PCIe)", "-75", "1", us) + `,` +
		`"gpu_huge":` + lambdaTypeJSON("8x B200 (180 GB SXM6)", "1e9", "8", us) + `,` +
		`"gpu_zero":` + lambdaTypeJSON("1x A10 (24 GB PCIe)", "0", "1", us) + `,` +
		`"gpu_null_price":` + lambdaTypeJSON("1x A10 (24 GB PCIe)", "null", "1", us) + `,` +
		`"gpu_count_mismatch":` + lambdaTypeJSON("8x H100 (80 GB SXM5)", "2392", "4", us) + `,` +
		`"gpu_half":` + lambdaTypeJSON("1x A10 (24 GB PCIe)", "75", "0.5", us) + `,` +
		`"gpu_new":` + lambdaTypeJSON("2x Z900 (64 GB)", "300", "2", us) + `,` +
		`"gpu_odd_text":` + lambdaTypeJSON("NVIDIA L40S accelerator", "99", "1", us) + `,` +
		`"cpu_4x_general":` + lambdaTypeJSON("4x CPU General (16 GiB)", "20", "0", `[]`) + `,` +
		`"gpu_regions_wrong":` + lambdaTypeJSON("1x A10 (24 GB PCIe)", "75", "1", `"us-east-1"`) + `,` +
		`"gpu_not_object": 7` +
		`}}`
	ls, rejects, err := ParseLambda([]byte(body), DefaultPriceCap)
	if err != nil {
		t.Fatalf("ParseLambda: %v", err)
	}
	checkParsed(t, ls, DefaultPriceCap)
	var got []string
	for _, l := range ls {
		got = append(got, l.ID+" "+l.GPU+" "+l.Price.Decimal())
	}
	want := []string{
		"gpu_1x_h100_sxm5 H100 SXM 3.29", // the first of two with one name
		"gpu_10x_rtx4090 RTX 4090 0.50",  // a two-digit count
		"gpu_new Z900 1.50",              // unknown: kept under its own name
		"gpu_odd_text L40S 0.99",         // no "(NN GB)": the raw text still names it
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listings:\n got %q\nwant %q", got, want)
	}
	byKey := listingByKey(ls)
	if l := byKey["gpu_10x_rtx4090|on-demand"]; l.GPUCount != 10 || l.Available {
		t.Errorf("gpu_10x_rtx4090: got %d GPUs available %v, want 10, sold out", l.GPUCount, l.Available)
	}
	if l := byKey["gpu_new|on-demand"]; l.Known || l.VRAMGB != 64 {
		t.Errorf("gpu_new: got known %v vram %v, want unknown 64", l.Known, l.VRAMGB)
	}
	wantRejects := map[string]int{
		listings.RejectDuplicateID: 1,
		listings.RejectBadRow:      5, // "NaN", count mismatch, 0.5 GPUs, regions a string, not an object
		listings.RejectNegative:    1,
		listings.RejectAboveCap:    1,
		listings.RejectZeroPrice:   2, // 0 and null
		listings.RejectZeroGPUs:    1,
	}
	if got := rejectCounts(rejects); !reflect.DeepEqual(got, wantRejects) {
		t.Errorf("rejects: got %v, want %v\n%+v", got, wantRejects, rejects)
	}
}

func TestParseLambdaErrors(t *testing.T) {
	testParseErrors(t, ParseLambda, []parseErrorCase{
		{"api error", `{"error":{"code":"global/invalid-api-key","message":"API key was invalid, expired, or deleted.","suggestion":"Check your API key"}}`,
			"global/invalid-api-key: API key was invalid, expired, or deleted."},
		{"malformed", `{"data":{"gpu_1x_a10":{`, "lambda: decode"},
		{"no data", `{}`, "no data object"},
		{"data a list", `{"data":[]}`, "no data object"},
		{"array", `[]`, "lambda: decode response"},
		{"empty", ``, "lambda: decode response"},
	})
}

func TestLambdaCollect(t *testing.T) {
	rec := readJSONFixture(t, lambdaRecording)
	const key = "secret_lambda_key_abc.123"
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string // "" = success
	}{
		{"ok", 200, string(rec), ""},
		{"bad key", 401, `{"error":{"code":"global/invalid-api-key","message":"API key was invalid, expired, or deleted."}}`, "API key was invalid"},
		{"key echoed", 403, `{"error":{"code":"global/forbidden","message":"key ` + key + ` is not allowed"}}`, "is not allowed"},
		{"key echoed in a 200", 200, `{"error":{"code":"x","message":"bad key ` + key + `"}}`, "bad key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotMethod, gotPath, gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotMethod, gotPath, gotAuth = r.Method, r.URL.Path, r.Header.Get("Authorization")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			src, ok := Get("lambda")
			if !ok {
				t.Fatal("lambda is not registered")
			}
			res, err := src.Collect(context.Background(), testEnv(srv.URL+"/api/v1/instance-types", map[string]string{"LAMBDA_API_KEY": key}))
			if gotMethod != http.MethodGet || gotPath != "/api/v1/instance-types" || gotAuth != "Bearer "+key {
				t.Errorf("got %s %s auth %q, want GET /api/v1/instance-types with the Bearer key", gotMethod, gotPath, gotAuth)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Collect: %v", err)
				}
				if got := len(res.Listings); got != 19 {
					t.Errorf("got %d listings, want 19", got)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q reveals the API key", err)
			}
		})
	}
}

func TestLambdaCollectWithoutKey(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++ }))
	defer srv.Close()
	for _, vars := range []map[string]string{nil, {"LAMBDA_API_KEY": ""}, {"LAMBDA_API_KEY": "  "}} {
		_, err := Lambda{}.Collect(context.Background(), testEnv(srv.URL, vars))
		if !errors.Is(err, ErrNoLambdaKey) {
			t.Errorf("env %v: got error %v, want ErrNoLambdaKey", vars, err)
		}
		if err != nil && !strings.Contains(err.Error(), "LAMBDA_API_KEY") {
			t.Errorf("got error %q, want it to name LAMBDA_API_KEY", err)
		}
	}
	if calls != 0 {
		t.Errorf("got %d requests without a key, want none", calls)
	}
}

func FuzzParseLambda(f *testing.F) {
	fuzzJSONParser(f, ParseLambda, readJSONFixture(f, lambdaRecording),
		[]byte(`{"error":{"code":"x","message":"y"}}`),
		[]byte(`{"data":{"a":`+lambdaTypeJSON("99x H100 (80 GB SXM5)", "1", "99", `[]`)+`,"a":1}}`))
}

func BenchmarkParseLambda(b *testing.B) {
	benchJSONParser(b, ParseLambda, readJSONFixture(b, lambdaRecording))
}
