package recommend

import (
	"math"
	"strings"
	"testing"
)

func TestParseParams(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"7B", 7e9},
		{"70b", 70e9},
		{"1.5B", 1.5e9},
		{"350M", 350e6},
		{" 1.8T ", 1.8e12},
		{"500k", 500e3},
		{"7e9", 7e9},
		{"7000000000", 7e9},
	}
	for _, tt := range tests {
		got, err := ParseParams(tt.in)
		if err != nil || math.Abs(got-tt.want) > 1e-6*tt.want {
			t.Errorf("ParseParams(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "B", "seven", "-7B", "0", "NaN", "Inf"} {
		if got, err := ParseParams(bad); err == nil {
			t.Errorf("ParseParams(%q) = %v, nil; want an error", bad, got)
		}
	}
}

func TestFormatParams(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{7e9, "7B"}, {1.5e9, "1.5B"}, {350e6, "350M"}, {140e6, "140M"}, {1.8e12, "1.8T"}, {70e9, "70B"}}
	for _, tt := range tests {
		if got := FormatParams(tt.in); got != tt.want {
			t.Errorf("FormatParams(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEstimateVRAM(t *testing.T) {
	tests := []struct {
		name    string
		job     Job
		wantGB  float64
		wantHow []string
	}{
		{"explicit wins", Job{VRAMGB: 40, Params: 70e9}, 40, []string{"given", "40 GB"}},
		{"inference bf16", Job{Task: "inference", Params: 7e9}, 16.8, []string{"7B", "2 B (bf16)", "14 GB", "20% working memory", "16.8 GB"}},
		{"inference int4", Job{Task: "inference", Params: 70e9, Precision: "int4"}, 42, []string{"0.5 B (int4)", "35 GB"}},
		{"batch fp32", Job{Task: "batch", Params: 1e9, Precision: "FP32"}, 4.8, []string{"4 B (fp32)"}},
		{"full training default", Job{Params: 7e9}, 134.4, []string{"full training", "16 B", "112 GB", "20% activations", "134.4 GB"}},
		{"70B full training", Job{Task: "train", Params: 70e9}, 1344, []string{"1120 GB", "1344 GB"}},
		{"finetune defaults to lora", Job{Task: "finetune", Params: 7e9}, (14 + 2.24) * 1.2, []string{"LoRA", "14 GB", "2% trainable", "140M", "2.2 GB"}},
		{"7B qlora", Job{Task: "finetune", Params: 7e9, Method: "qlora"}, (3.5 + 2.24) * 1.2, []string{"QLoRA", "4-bit", "3.5 GB", "6.9 GB"}},
		{"image unsized", Job{Task: "image"}, 24, []string{"image job", "24 GB tier"}},
		{"video sized by model", Job{Task: "video", Params: 5e9}, 12, []string{"video", "10 GB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EstimateVRAM(tt.job)
			if err != nil {
				t.Fatalf("EstimateVRAM: %v", err)
			}
			if math.Abs(got.GB-tt.wantGB) > 1e-9 {
				t.Errorf("GB = %v, want %v", got.GB, tt.wantGB)
			}
			for _, w := range tt.wantHow {
				if !strings.Contains(got.How, w) {
					t.Errorf("How = %q, want it to contain %q", got.How, w)
				}
			}
		})
	}
}

func TestEstimateVRAMErrors(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want string
	}{
		{"train without size", Job{Task: "train"}, "needs a VRAM size or a model size"},
		{"unknown task", Job{Task: "render", Params: 7e9}, "unknown task"},
		{"unknown precision", Job{Params: 7e9, Precision: "fp64"}, "unknown precision"},
		{"unknown method", Job{Params: 7e9, Method: "dora"}, "unknown method"},
		{"method on inference", Job{Task: "inference", Params: 7e9, Method: "lora"}, "applies to train and finetune"},
		{"full training at int4", Job{Params: 7e9, Precision: "int4"}, "full training at int4"},
		{"negative vram", Job{VRAMGB: -1}, "not a positive size"},
		{"nan params", Job{Params: math.NaN()}, "not a positive count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EstimateVRAM(tt.job)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "estimate vram: ") {
				t.Errorf("EstimateVRAM error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
