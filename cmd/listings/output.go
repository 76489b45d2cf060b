package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/listings-dev/listings"
)

type anyWriter = io.Writer

// table is an aligned text table.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.head, "\t"))
	for _, r := range t.rows {
		for i := range r {
			r[i] = clean(r[i])
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// clean strips control characters from scraped text before it reaches a
// terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// usd formats a price for a table: four decimals, enough to tell medians
// apart, with more when a price is below a cent.
func usd(p listings.Price) string {
	if p != 0 && p < 10_000 && p > -10_000 {
		return "$" + p.Decimal()
	}
	return fmt.Sprintf("$%.4f", p.Float())
}

// money formats an amount of money (not a rate).
func money(p listings.Price) string { return fmt.Sprintf("$%.2f", p.Float()) }

// stamp formats a time for humans; "-" for zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}

// ago says how old t is at now.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in the future"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress shows live per-source progress on a terminal: one bar over
// the sources, its description naming the source that last finished.
func newProgress(w io.Writer) progressFunc {
	var mu sync.Mutex
	var bar *progressbar.ProgressBar
	started := 0
	return func(source string, done bool, run *listings.Run) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			started++
			if bar == nil {
				bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(w),
					progressbar.OptionSetDescription("collecting"), progressbar.OptionClearOnFinish(),
					progressbar.OptionSpinnerType(14))
			}
			bar.ChangeMax(started)
			bar.Describe("collecting " + source)
			return
		}
		bar.Describe(fmt.Sprintf("%s %s (%d listings)", source, run.Status, run.Listings))
		bar.Add(1)
		if bar.State().CurrentNum >= int64(started) {
			bar.Finish()
		}
	}
}

// human formats a duration the way a person says it: "36h", "7d", "1d12h", "90m".
func human(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.Round(time.Second).String()
}
