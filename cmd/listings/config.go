package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/listings-dev/listings"
)

// Config is the TOML configuration file (DESIGN §6). Everything works
// without one. Flags beat the environment, which beats the file. Unknown
// keys are errors with their line number.
type Config struct {
	DB       string `toml:"db"`
	MaxAge   string `toml:"max_age"`   // default 36h
	MinLife  string `toml:"min_life"`  // default 24h
	PriceCap string `toml:"price_cap"` // USD per GPU-hour; default 1000
	Contact  string `toml:"contact"`   // User-Agent contact (a URL or e-mail)
	// FX: 1 unit of the key currency in USD ("EUR" = 1.08). fx_date records
	// when the rates were set; it is stored with each run's rates.
	FX     map[string]float64      `toml:"fx"`
	FXDate string                  `toml:"fx_date"`
	Source map[string]SourceConfig `toml:"source"`

	path     string
	maxAge   time.Duration
	minLife  time.Duration
	priceCap listings.Price
	fx       map[string]listings.Price
}

// SourceConfig is one [source.NAME] table. A user-defined HTML table
// source sets kind = "html-table" and the table keys.
type SourceConfig struct {
	Enabled *bool   `toml:"enabled"`
	URL     string  `toml:"url"`
	Timeout string  `toml:"timeout"`
	RPS     float64 `toml:"requests_per_second"`
	Limit   int     `toml:"limit"`

	Kind        string `toml:"kind"`         // "html-table" for user sources
	Table       string `toml:"table"`        // CSS selector of the table
	TableHeader string `toml:"table_header"` // or: a header text the table contains
	GPUColumn   string `toml:"gpu_column"`   // header text of the GPU column
	CountColumn string `toml:"count_column"` // header text of the GPU count column (optional)
	PriceColumn string `toml:"price_column"` // header text of the price column
	VRAMColumn  string `toml:"vram_column"`  // optional
	IDColumn    string `toml:"id_column"`    // optional: default a slug of the GPU text, count and region
	RegionCol   string `toml:"region_column"`
	Unit        string `toml:"unit"`     // "hourly" or "monthly"
	PerGPU      bool   `toml:"per_gpu"`  // the price is already per GPU
	Currency    string `toml:"currency"` // default USD
}

// configPath resolves --config, $LISTINGS_CONFIG, then the XDG default.
// found is false when the path is the default and does not exist.
func configPath(flagVal string, getenv func(string) string) (path string, explicit bool) {
	if flagVal != "" {
		return flagVal, true
	}
	if v := getenv("LISTINGS_CONFIG"); v != "" {
		return v, true
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir == "" {
		return "", false
	}
	return filepath.Join(dir, "listings", "listings.toml"), false
}

func loadConfig(flagVal string, getenv func(string) string) (*Config, error) {
	path, explicit := configPath(flagVal, getenv)
	cfg := &Config{}
	if path != "" {
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			if err := decodeConfig(b, cfg); err != nil {
				return nil, fmt.Errorf("config %s: %w", path, err)
			}
			cfg.path = path
		case errors.Is(err, os.ErrNotExist) && !explicit:
		default:
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	if err := cfg.resolve(); err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.path, err)
	}
	return cfg, nil
}

func decodeConfig(b []byte, cfg *Config) error {
	dec := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields()
	err := dec.Decode(cfg)
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var msgs []string
		for _, e := range strict.Errors {
			row, _ := e.Position()
			msgs = append(msgs, fmt.Sprintf("line %d: unknown key %q", row, strings.Join(e.Key(), ".")))
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("line %d, column %d: %s", row, col, de.Error())
	}
	return err
}

func (c *Config) resolve() error {
	var err error
	if c.maxAge, err = durationOr(c.MaxAge, listings.DefaultMaxAge); err != nil {
		return fmt.Errorf("max_age: %w", err)
	}
	if c.minLife, err = durationOr(c.MinLife, listings.DefaultMinLife); err != nil {
		return fmt.Errorf("min_life: %w", err)
	}
	for name, sc := range c.Source {
		if sc.RPS < 0 || sc.RPS > 100 {
			return fmt.Errorf("source.%s.requests_per_second: %v is not between 0 and 100", name, sc.RPS)
		}
	}
	if c.PriceCap != "" {
		if c.priceCap, err = listings.ParsePrice(c.PriceCap); err != nil || c.priceCap <= 0 {
			return fmt.Errorf("price_cap %q: want a positive USD amount", c.PriceCap)
		}
	}
	c.fx = map[string]listings.Price{}
	keys := make([]string, 0, len(c.FX))
	for k := range c.FX {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, err := listings.PriceFromFloat(c.FX[k])
		if err != nil || p <= 0 {
			return fmt.Errorf("fx.%s: want a positive rate", k)
		}
		c.fx[strings.ToUpper(k)] = p
	}
	for name, s := range c.Source {
		if s.Timeout != "" {
			if _, err := parseDuration(s.Timeout); err != nil {
				return fmt.Errorf("source.%s.timeout: %w", name, err)
			}
		}
	}
	return nil
}

func durationOr(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	return parseDuration(s)
}

// resolveDB applies the precedence --db, $LISTINGS_DB, config, default.
func resolveDB(flagVal string, getenv func(string) string, cfg *Config) string {
	switch {
	case flagVal != "":
		return flagVal
	case getenv("LISTINGS_DB") != "":
		return getenv("LISTINGS_DB")
	case cfg != nil && cfg.DB != "":
		return cfg.DB
	}
	dir := getenv("XDG_DATA_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "listings.db"
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "listings", "listings.db")
}

// sourceEnabled says whether a plain collect runs name.
func (c *Config) sourceEnabled(name string, def bool) bool {
	if s, ok := c.Source[name]; ok && s.Enabled != nil {
		return *s.Enabled
	}
	return def
}

// parseDuration reads Go durations plus days ("7d", "1d12h").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var total time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		var days float64
		if _, err := fmt.Sscanf(s[:i], "%g", &days); err != nil || days < 0 {
			return 0, fmt.Errorf("duration %q: bad day count", s)
		}
		total = time.Duration(days * float64(24*time.Hour))
		s = s[i+1:]
		if s == "" {
			return total, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want Go syntax or days (36h, 7d)", s)
	}
	return total + d, nil
}

// parseTime reads RFC 3339 times (and plain dates, as midnight UTC).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-11-30T03:00:00Z) or a date", s)
}
