package recommend

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/listings-dev/listings"
)

// Tasks a job can be (DESIGN §6 --task). The empty task is training.
const (
	TaskImage     = "image"
	TaskVideo     = "video"
	TaskTrain     = "train"
	TaskFinetune  = "finetune"
	TaskInference = "inference"
	TaskBatch     = "batch"
)

// Training methods (--method).
const (
	MethodFull  = "full"
	MethodLoRA  = "lora"
	MethodQLoRA = "qlora"
)

// Rules of thumb of the VRAM estimate. They are physics and conventions,
// not prices.
const (
	// bytesGB is one gigabyte as the estimate counts it (10^9 bytes). Cards
	// are sold in GiB, so the comparison errs on the safe side.
	bytesGB = 1e9
	// adamBytes is the memory per trained parameter with mixed-precision
	// Adam: fp16/bf16 weights (2) and gradients (2), an fp32 master copy (4)
	// and two fp32 moments (8). In plain fp32 it is 4+4+8, the same 16.
	adamBytes = 16
	// activationShare is the share added for activations when training.
	activationShare = 0.20
	// workingShare is the share added to inference weights for the KV
	// cache, activations and the runtime.
	workingShare = 0.20
	// loraShare is the trainable part of a LoRA or QLoRA fine-tune, as a
	// share of the model's parameters.
	loraShare = 0.02
	// qloraBytes is the memory of one frozen 4-bit parameter.
	qloraBytes = 0.5
	// DefaultPrecision is the precision of a job that names none.
	DefaultPrecision = "bf16"
)

// bytesPerParam is the memory of one parameter at each precision.
var bytesPerParam = map[string]float64{
	"fp32": 4,
	"bf16": 2,
	"fp16": 2,
	"fp8":  1,
	"int8": 1,
	"int4": 0.5,
}

// Job is what the user wants to run. Zero values mean the documented
// defaults.
type Job struct {
	Task      string  // image|video|train|finetune|inference|batch ("" = train)
	VRAMGB    float64 // explicit need per card in GB; 0 = estimate from Params
	Params    float64 // model parameters (7e9 for "7B"); see ParseParams
	Precision string  // fp32|bf16|fp16|fp8|int8|int4 ("" = bf16)
	Method    string  // full|lora|qlora ("" = full for train, lora for finetune)
	Hours     float64 // expected wall-clock hours of the job (required)
	Resumable bool    // the job checkpoints and can resume: interruptible capacity is an option

	DatasetGB       float64 // dataset size, checked against the listings' disk
	CheckpointGB    float64 // one checkpoint's size
	CheckpointsKept int     // checkpoints kept on disk (0 = 3)
	// RerunMargin is the share added to a budget for reruns, 0 to 1 (nil =
	// DefaultRerunMargin; 0 = no margin). The budget without it is always
	// shown beside it.
	RerunMargin *float64

	// Optional spot model for interruptible options (see CostInput): billable
	// hours given, or interruption rate λ per hour with checkpoint write and
	// restart minutes. With none of them a spot run is billed its useful
	// hours (no interruptions), and the notes say so.
	SpotHours             float64
	InterruptRate         float64
	CheckpointMin         float64
	RestartMin            float64
	CheckpointIntervalMin float64
	// Extras are what a spot run costs on top of compute; they go into
	// every interruptible option's total and break-even.
	Extras Extras
}

// Extras are the money a spot run costs on top of compute (DESIGN §5
// rule 4): storage, transfer, recovery and operations, in USD.
type Extras struct {
	Storage, Transfer, Recovery, Ops listings.Price
}

// Defaults of a job.
const (
	DefaultCheckpointsKept = 3
	DefaultRerunMargin     = 0.25
)

// ParseRerunMargin reads a rerun margin as a fraction ("0.25") or a
// percentage ("25%"); it must be between 0 (no margin) and 1 (100%).
func ParseRerunMargin(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pctSign := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil {
		return 0, fmt.Errorf("parse rerun margin %q: want a fraction like 0.25 or a percentage like 25%%", s)
	}
	if pctSign {
		v /= 100
	}
	if err := checkMargin(v); err != nil {
		return 0, fmt.Errorf("parse rerun margin %q: %w", s, err)
	}
	return v, nil
}

// checkMargin checks a rerun margin: a fraction from 0 to 1.
func checkMargin(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return fmt.Errorf("rerun margin %v must be a fraction from 0 to 1 (0.25 or 25%%)", v)
	case v > 1:
		return fmt.Errorf("rerun margin %v is above 1 (100%%): give a fraction like 0.25 or a percentage like 25%%", v)
	}
	return nil
}

// Estimate is the VRAM a job needs on one card, and how it was worked out,
// in words a user can check.
type Estimate struct {
	GB  float64 `json:"gb"`
	How string  `json:"how"`
}

// ParseParams reads a model size: "7B", "70b", "1.5B", "350M", "1.8T",
// "500K" or a plain number ("7e9", "7000000000").
func ParseParams(s string) (float64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'B':
			mult = 1e9
		case 'T':
			mult = 1e12
		}
		if mult != 1 {
			t = strings.TrimSpace(t[:len(t)-1])
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("parse params %q: want a size like 7B, 1.5B or 350M", s)
	}
	v *= mult
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("parse params %q: must be a positive size", s)
	}
	return v, nil
}

// FormatParams writes a parameter count the way model cards do: "7B",
// "1.5B", "350M".
func FormatParams(p float64) string {
	switch {
	case p >= 1e12:
		return trimNum(p/1e12, 2) + "T"
	case p >= 1e9:
		return trimNum(p/1e9, 2) + "B"
	case p >= 1e6:
		return trimNum(p/1e6, 2) + "M"
	case p >= 1e3:
		return trimNum(p/1e3, 2) + "K"
	}
	return trimNum(p, 0)
}

// trimNum formats v with at most prec decimals, trailing zeros dropped.
func trimNum(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// gbString formats a size in GB with at most one decimal.
func gbString(v float64) string { return trimNum(v, 1) + " GB" }

// normTask returns the task in lower case, "" as train, or an error.
func normTask(task string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(task))
	switch t {
	case "":
		return TaskTrain, nil
	case TaskImage, TaskVideo, TaskTrain, TaskFinetune, TaskInference, TaskBatch:
		return t, nil
	}
	return "", fmt.Errorf("unknown task %q (want image, video, train, finetune, inference or batch)", task)
}

// training reports whether a task trains weights.
func training(task string) bool { return task == TaskTrain || task == TaskFinetune }

// EstimateVRAM works out the memory one card needs for the job. An explicit
// VRAMGB wins. Otherwise, from Params: inference (and image, video, batch)
// needs the weights at the precision plus 20% working memory; full training
// 16 bytes per parameter (mixed-precision Adam) plus 20% activations; LoRA
// the frozen weights at the precision plus a 2% trainable part with Adam,
// plus activations; QLoRA the same with 4-bit frozen weights. An image or
// video job with neither is sized at the 24 GB tier. Any other job with
// neither is an error.
func EstimateVRAM(j Job) (Estimate, error) {
	task, err := normTask(j.Task)
	if err != nil {
		return Estimate{}, fmt.Errorf("estimate vram: %w", err)
	}
	if math.IsNaN(j.VRAMGB) || math.IsInf(j.VRAMGB, 0) || j.VRAMGB < 0 {
		return Estimate{}, fmt.Errorf("estimate vram: vram %v GB is not a positive size", j.VRAMGB)
	}
	if math.IsNaN(j.Params) || math.IsInf(j.Params, 0) || j.Params < 0 {
		return Estimate{}, fmt.Errorf("estimate vram: params %v is not a positive count", j.Params)
	}
	if j.VRAMGB > 0 {
		return Estimate{GB: j.VRAMGB, How: "given: " + gbString(j.VRAMGB) + " per card"}, nil
	}
	if j.Params == 0 {
		if task == TaskImage || task == TaskVideo {
			return Estimate{GB: tier24, How: "an " + task + " job with no VRAM need or model size given: sized at the 24 GB tier"}, nil
		}
		return Estimate{}, fmt.Errorf("estimate vram: a %s job needs a VRAM size or a model size (params)", task)
	}
	prec := strings.ToLower(strings.TrimSpace(j.Precision))
	if prec == "" {
		prec = DefaultPrecision
	}
	b, ok := bytesPerParam[prec]
	if !ok {
		return Estimate{}, fmt.Errorf("estimate vram: unknown precision %q (want fp32, bf16, fp16, fp8, int8 or int4)", j.Precision)
	}
	method := strings.ToLower(strings.TrimSpace(j.Method))
	switch {
	case !training(task) && method != "":
		return Estimate{}, fmt.Errorf("estimate vram: method %q applies to train and finetune, not %s", j.Method, task)
	case method == "" && task == TaskTrain:
		method = MethodFull
	case method == "" && task == TaskFinetune:
		method = MethodLoRA
	case method != "" && method != MethodFull && method != MethodLoRA && method != MethodQLoRA:
		return Estimate{}, fmt.Errorf("estimate vram: unknown method %q (want full, lora or qlora)", j.Method)
	}
	p := j.Params
	ps := FormatParams(p)
	switch method {
	case "": // inference, batch, image, video
		w := p * b / bytesGB
		gb := w * (1 + workingShare)
		how := fmt.Sprintf("%s: %s params × %s B (%s) = %s of weights + %d%% working memory = %s",
			task, ps, trimNum(b, 1), prec, gbString(w), pct(workingShare), gbString(gb))
		return Estimate{GB: gb, How: how}, nil
	case MethodFull:
		if b < 2 {
			return Estimate{}, fmt.Errorf("estimate vram: full training at %s is not a thing; use --method qlora or lora", prec)
		}
		st := p * adamBytes / bytesGB
		gb := st * (1 + activationShare)
		how := fmt.Sprintf("full training: %s params × %d B (weights, gradients, fp32 master copy and two Adam moments) = %s + %d%% activations = %s",
			ps, adamBytes, gbString(st), pct(activationShare), gbString(gb))
		return Estimate{GB: gb, How: how}, nil
	default: // lora, qlora
		fb, label := b, prec
		if method == MethodQLoRA {
			fb, label = qloraBytes, "4-bit"
		}
		frozen := p * fb / bytesGB
		train := p * loraShare * adamBytes / bytesGB
		gb := (frozen + train) * (1 + activationShare)
		how := fmt.Sprintf("%s: frozen weights %s params × %s B (%s) = %s + %d%% trainable with Adam (%s params × %d B) = %s + %d%% activations = %s",
			methodName(method), ps, trimNum(fb, 1), label, gbString(frozen), pct(loraShare), FormatParams(p*loraShare), adamBytes,
			gbString(train), pct(activationShare), gbString(gb))
		return Estimate{GB: gb, How: how}, nil
	}
}

func methodName(m string) string {
	if m == MethodQLoRA {
		return "QLoRA"
	}
	return "LoRA"
}

func pct(share float64) int { return int(math.Round(share * 100)) }
