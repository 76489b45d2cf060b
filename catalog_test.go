package listings

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestNormalizeNames(t *testing.T) {
	cases := []struct {
		raw  string
		vram float64
		want string
	}{
		{"RTX 4090", 24, "RTX 4090"},
		{"NVIDIA GeForce RTX 4090", 0, "RTX 4090"},
		{"geforcertx4090-pcie-24gb", 0, "RTX 4090"},
		{"1x RTX 4090 (24 GB)", 0, "RTX 4090"},
		{"A100 SXM4", 80, "A100 80GB SXM"},
		{"A100 SXM4", 40, "A100 40GB SXM"},
		{"A100 PCIE", 40, "A100 40GB PCIe"},
		{"A100 PCIE", 80, "A100 80GB PCIe"},
		{"A100X", 80, "A100 80GB PCIe"},
		{"NVIDIA A100-SXM4-80GB", 80, "A100 80GB SXM"},
		{"NVIDIA A100 80GB PCIe", 80, "A100 80GB PCIe"},
		{"A100 (40 GB PCIe)", 0, "A100 40GB PCIe"},
		{"A100 (40 GB SXM4)", 0, "A100 40GB SXM"},
		{"A100 (80 GB SXM4)", 0, "A100 80GB SXM"},
		{"a100-pcie-80gb", 0, "A100 80GB PCIe"},
		{"NVIDIA H100 80GB HBM3", 80, "H100 SXM"},
		{"H100 SXM", 80, "H100 SXM"},
		{"H100 PCIE", 80, "H100 PCIe"},
		{"H100 NVL", 94, "H100 NVL"},
		{"H100 (80 GB SXM5)", 0, "H100 SXM"},
		{"H100 (80 GB PCIe)", 0, "H100 PCIe"},
		{"h100-sxm5-80gb", 0, "H100 SXM"},
		{"NVIDIA H200", 141, "H200"},
		{"GH200 (96 GB)", 0, "GH200"},
		{"B200 (180 GB SXM6)", 0, "B200"},
		{"AMD Instinct MI300X OAM", 192, "MI300X"},
		{"RTX 6000Ada", 48, "RTX 6000 Ada"},
		{"NVIDIA RTX 6000 Ada Generation", 48, "RTX 6000 Ada"},
		{"Q RTX 6000", 24, "Quadro RTX 6000"},
		{"RTX 6000 (24 GB)", 0, "Quadro RTX 6000"},
		{"A6000 (48 GB)", 0, "RTX A6000"},
		{"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96, "RTX PRO 6000"},
		{"RTX 4070S Ti", 16, "RTX 4070 Ti SUPER"},
		{"NVIDIA GeForce RTX 4080 SUPER", 16, "RTX 4080 SUPER"},
		{"GTX 1660 S", 6, "GTX 1660 SUPER"},
		{"Tesla V100", 16, "V100 16GB"},
		{"Tesla V100-SXM2-32GB", 32, "V100 32GB"},
		{"Tesla V100 (16 GB)", 0, "V100 16GB"},
		{"Tesla T4", 15, "T4"},
		{"RTX 3060 laptop", 12, "RTX 3060 Laptop"},
		{"l40-pcie-48gb", 0, "L40"},
		{"A10 (24 GB PCIe)", 0, "A10"},
		{"NVIDIA RTX 4000 Ada Generation", 20, "RTX 4000 Ada"},
	}
	for _, c := range cases {
		got, known := Normalize(c.raw, c.vram)
		if got != c.want || !known {
			t.Errorf("Normalize(%q, %v) = %q, %v; want %q, true", c.raw, c.vram, got, known, c.want)
		}
	}
	for _, raw := range []string{"RTX 4090 D", "NVIDIA GeForce RTX 5090 D", "RTX 3080 Laptop", "RTX A4000 Ada"} {
		if got, known := Normalize(raw, 0); known {
			t.Errorf("Normalize(%q) = %q: a different card must stay unknown, not be guessed", raw, got)
		}
	}
	if got, known := Normalize("NVIDIA H100 SXM Hopper", 80); !known || got != "H100 SXM" {
		t.Errorf("a packaging word after the name: %q, %v", got, known)
	}
	if got, known := Normalize("Voodoo 5 6000", 0); known || got != "Voodoo 5 6000" {
		t.Errorf("unknown name: got %q, %v; want it kept as-is and unknown", got, known)
	}
}

// TestNormalizeRecordings maps every GPU name of the real Vast.ai and RunPod
// recordings to a catalog name.
func TestNormalizeRecordings(t *testing.T) {
	var vast []struct {
		GPUName string  `json:"gpu_name"`
		GPURAM  float64 `json:"gpu_ram"`
	}
	readJSON(t, "fixtures/vastai/vast-search-offers-full-2024-11-05.json", &vast)
	if len(vast) != 1396 {
		t.Fatalf("vast recording: %d offers, want 1396", len(vast))
	}
	for _, o := range vast {
		if _, known := Normalize(o.GPUName, o.GPURAM/1024); !known {
			t.Errorf("vast %q (%v MiB) is not in the catalog", o.GPUName, o.GPURAM)
		}
	}
	var runpod []struct {
		ID          string  `json:"id"`
		DisplayName string  `json:"displayName"`
		Mem         float64 `json:"memoryInGb"`
	}
	readJSON(t, "fixtures/runpod/runpod-graphql-gputypes-full-2025-06-21.json", &runpod)
	for _, g := range runpod {
		if g.ID == "unknown" {
			continue
		}
		a, ok1 := Normalize(g.ID, g.Mem)
		b, ok2 := Normalize(g.DisplayName, g.Mem)
		if !ok1 || !ok2 || a != b {
			t.Errorf("runpod %q / %q: %q %v / %q %v", g.ID, g.DisplayName, a, ok1, b, ok2)
		}
		if gpu, _ := Lookup(a); gpu.VRAMGB != int(g.Mem) {
			t.Errorf("runpod %q: catalog VRAM %d, recording %v", g.ID, gpu.VRAMGB, g.Mem)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func TestMatch(t *testing.T) {
	names := func(gs []GPU) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Name)
		}
		return out
	}
	cases := map[string][]string{
		"4090":     {"RTX 4090"},
		"rtx4090":  {"RTX 4090"},
		"RTX 4090": {"RTX 4090"},
		"3090":     {"RTX 3090"},
		"h100 sxm": {"H100 SXM"},
		"a100":     {"A100 40GB PCIe", "A100 40GB SXM", "A100 80GB PCIe", "A100 80GB SXM"},
		"h100":     {"H100 PCIe", "H100 SXM", "H100 NVL"},
		"v100":     {"V100 16GB", "V100 32GB"},
		"nosuch":   nil,
	}
	for q, want := range cases {
		got := names(Match(q))
		if len(got) != len(want) {
			t.Errorf("Match(%q) = %v, want %v", q, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("Match(%q) = %v, want %v", q, got, want)
			}
		}
	}
}

func TestParsePrice(t *testing.T) {
	cases := map[string]Price{"0.49": 490000, "3": 3000000, "$1.00": 1000000, "0.4221863": 422186, "0.0000005": 1, "-1.5": -1500000}
	for s, want := range cases {
		got, err := ParsePrice(s)
		if err != nil || got != want {
			t.Errorf("ParsePrice(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "abc", "1.2.3", "NaN", "1e5x"} {
		if _, err := ParsePrice(s); err == nil {
			t.Errorf("ParsePrice(%q): no error", s)
		}
	}
	if got := Price(490000).Decimal(); got != "0.49" {
		t.Errorf("Decimal = %q", got)
	}
	if got := Price(3000000).Decimal(); got != "3.00" {
		t.Errorf("Decimal = %q", got)
	}
	if got := Price(2392000000).MulDiv(1, 8*100); got != 2990000 {
		t.Errorf("MulDiv = %d", got)
	}
	if _, err := PriceFromFloat(nan()); err == nil {
		t.Error("PriceFromFloat(NaN): no error")
	}
}

func nan() float64 { var z float64; return z / z }

func BenchmarkNormalizeLongName(b *testing.B) {
	long := strings.Repeat("nvidia rtx ", 2000)
	for b.Loop() {
		if _, known := Normalize(long, 0); known {
			b.Fatal("a 22,000-byte name is not a catalog GPU")
		}
	}
}

func BenchmarkNormalize(b *testing.B) {
	for b.Loop() {
		Normalize("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96)
	}
}

func TestPriceRound(t *testing.T) {
	cases := []struct {
		p    Price
		d    int
		want Price
	}{{933340, 4, 933300}, {2833338, 4, 2833300}, {6125000, 2, 6130000}, {-6125000, 2, -6130000}, {1166675, 4, 1166700}, {490000, 6, 490000}}
	for _, c := range cases {
		if got := c.p.Round(c.d); got != c.want {
			t.Errorf("Price(%d).Round(%d) = %d, want %d", c.p, c.d, got, c.want)
		}
	}
}
