package scrapers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"github.com/listings-dev/listings"
	"golang.org/x/net/html"
)

// HTMLTableKind is the config kind of a user-defined HTML table source
// ([source.NAME] with kind = "html-table").
const HTMLTableKind = "html-table"

// HTMLTableConfig describes a pricing table on any web page, so a user can
// add a source from the config file without writing Go. Its fields are the
// config keys url, table, table_header, gpu_column, count_column,
// price_column, vram_column, id_column, region_column, unit, per_gpu and
// currency of a [source.NAME] table with kind = "html-table".
//
// Columns are named by their header text: an exact match (case-insensitive,
// white space collapsed) wins, otherwise the first header containing the
// text. Every column the config names must exist in the table, or the run
// fails: a missing count column would make every price wrong.
type HTMLTableConfig struct {
	URL         string // the page; required, http or https
	Table       string // CSS selector of the table (or of an element holding it)
	TableHeader string // or: a header (or caption) text the table contains
	// GPUColumn (required) holds the GPU ("NVIDIA H100 SXM", "2x A40").
	GPUColumn string
	// CountColumn holds the GPUs per offer; without it the count comes from
	// the GPU text ("2x A40"), else 1.
	CountColumn string
	PriceColumn string // required: the price, in the unit below
	VRAMColumn  string // memory per GPU ("80 GB"); else from the GPU text
	// IDColumn holds the offer's id; without it the id is a slug of the GPU
	// text, the count and the region ("nvidia-h100-sxm-8x-us-east").
	IDColumn     string
	RegionColumn string
	Unit         string // "hourly" (kind on-demand) or "monthly" (kind monthly, / 730); required
	PerGPU       bool   // the price is already per GPU; else it is per offer and divided by the count
	Currency     string // ISO code of the prices; default USD
}

// htmlTableSource is a source built from an HTMLTableConfig.
type htmlTableSource struct {
	name string
	c    HTMLTableConfig
}

// reSourceName is what a config-defined source may be called: it is a key
// in flags, the index and file names.
var reSourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// NewHTMLTable returns the source called name that collects the table c
// describes. It is not registered: the command line builds one per
// html-table entry of the config. It fails when name is not a plain name or
// is a built-in source's, when URL is not an http(s) URL, when the GPU or
// price column is missing, when Unit is not hourly or monthly, when Currency
// is not a three-letter code, or when Table is not a valid CSS selector.
func NewHTMLTable(name string, c HTMLTableConfig) (Source, error) {
	if !reSourceName.MatchString(name) {
		return nil, fmt.Errorf("html-table %q: the name must be letters, digits, '.', '_' or '-' (at most 64)", clipRunes(name, 80))
	}
	if _, builtin := Get(name); builtin {
		return nil, fmt.Errorf("html-table %q: the name is a built-in source's", name)
	}
	c, err := c.checked()
	if err != nil {
		return nil, fmt.Errorf("html-table %q: %w", name, err)
	}
	return &htmlTableSource{name: name, c: c}, nil
}

// Name returns the config name.
func (s *htmlTableSource) Name() string { return s.name }

// DefaultURL returns the configured URL.
func (s *htmlTableSource) DefaultURL() string { return s.c.URL }

// Collect fetches env.URL through the polite colly layer (robots.txt
// honoured, size limit enforced) and parses it.
func (s *htmlTableSource) Collect(ctx context.Context, env *Env) (*Result, error) {
	doc, err := FetchHTML(ctx, env.Client, env.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: fetch page: %w", s.name, err)
	}
	ls, rejects, err := parseHTMLTable(doc, s.name, s.c, env.PriceCap)
	return &Result{Listings: ls, Rejects: rejects}, err
}

// checked validates c and fills its defaults.
func (c HTMLTableConfig) checked() (HTMLTableConfig, error) {
	c.URL = strings.TrimSpace(c.URL)
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return c, errors.New("url is required")
	case err != nil:
		return c, fmt.Errorf("url: %w", err)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return c, fmt.Errorf("url %q: want an http or https URL", RedactURL(u))
	}
	if strings.TrimSpace(c.GPUColumn) == "" {
		return c, errors.New("gpu_column is required")
	}
	if strings.TrimSpace(c.PriceColumn) == "" {
		return c, errors.New("price_column is required")
	}
	switch u := strings.ToLower(strings.TrimSpace(c.Unit)); u {
	case "hourly", "monthly":
		c.Unit = u
	case "":
		return c, errors.New(`unit is required ("hourly" or "monthly")`)
	default:
		return c, fmt.Errorf(`unit %q: want "hourly" or "monthly"`, clipRunes(c.Unit, 40))
	}
	c.Currency = strings.ToUpper(strings.TrimSpace(c.Currency))
	if c.Currency == "" {
		c.Currency = listings.USD
	}
	if len(c.Currency) != 3 || strings.IndexFunc(c.Currency, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
		return c, fmt.Errorf("currency %q: want a three-letter code such as USD or EUR", clipRunes(c.Currency, 40))
	}
	if c.Table = strings.TrimSpace(c.Table); c.Table != "" {
		if _, err := cascadia.ParseGroup(c.Table); err != nil {
			return c, fmt.Errorf("table selector %q: %w", c.Table, err)
		}
	}
	return c, nil
}

// htmlTableColumns are the column indexes of one table (-1: not configured).
type htmlTableColumns struct {
	gpu, count, price, vram, id, region int
}

// columns finds the configured columns in headers; missing lists the
// configured ones it could not find.
func (c *HTMLTableConfig) columns(headers []string) (cols htmlTableColumns, missing []string) {
	find := func(name string, required bool) int {
		if strings.TrimSpace(name) == "" && !required {
			return -1
		}
		i := columnNamed(headers, name)
		if i < 0 {
			missing = append(missing, strconv.Quote(name))
		}
		return i
	}
	cols.gpu = find(c.GPUColumn, true)
	cols.count = find(c.CountColumn, false)
	cols.price = find(c.PriceColumn, true)
	cols.vram = find(c.VRAMColumn, false)
	cols.id = find(c.IDColumn, false)
	cols.region = find(c.RegionColumn, false)
	return cols, missing
}

// tables returns the candidate tables of doc: those Table selects (or that
// sit inside what it selects), or every table; then only those whose
// header or caption contains TableHeader, when set.
func (c *HTMLTableConfig) tables(doc *goquery.Document) []*html.Node {
	var cands []*html.Node
	seen := map[*html.Node]bool{}
	add := func(n *html.Node) {
		if !seen[n] {
			seen[n] = true
			cands = append(cands, n)
		}
	}
	if c.Table != "" {
		for _, n := range doc.Find(c.Table).Nodes {
			if n.Type == html.ElementNode && n.Data == "table" {
				add(n)
				continue
			}
			for _, t := range findTables(n) {
				add(t)
			}
		}
	} else {
		for _, root := range doc.Nodes {
			for _, t := range findTables(root) {
				add(t)
			}
		}
	}
	if strings.TrimSpace(c.TableHeader) == "" {
		return cands
	}
	want := foldHeader(c.TableHeader)
	var out []*html.Node
	for _, t := range cands {
		gt := readTable(t)
		text := strings.Join(gt.headers, " | ")
		for ch := t.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.Type == html.ElementNode && ch.Data == "caption" {
				text += " | " + nodeText(ch, maxCellText)
			}
		}
		if strings.Contains(foldHeader(squash(text, 4*maxCellText)), want) {
			out = append(out, t)
		}
	}
	return out
}

// ParseHTMLTable parses the table that c describes on a page. Listings are
// of kind on-demand (unit hourly) or monthly (unit monthly, price / 730),
// per GPU-hour: the price divided by the GPU count unless PerGPU. Their
// Source is "html-table"; the source built by NewHTMLTable sets its own
// name. Currency is c.Currency unless the price cell names another ("€" on
// a USD config gives EUR; "$" follows a dollar currency such as CAD); see
// parseMoney for the number formats. A row whose text says "Sold out" or
// "Out of stock" gives Available false.
//
// Rows without a price ("Contact us"), without a GPU, with zero GPUs, or
// whose count column disagrees with a count in the GPU text ("2x A40" in a
// row of 4) are rejected with a reason; fully empty rows and caption rows
// are skipped. No matching table, a table without a configured column, or
// no listing at all is an error wrapping ErrMarkupChanged; an invalid c is
// an error too.
func ParseHTMLTable(doc *goquery.Document, c HTMLTableConfig, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	c, err := c.checked()
	if err != nil {
		return nil, nil, fmt.Errorf("html-table: %w", err)
	}
	return parseHTMLTable(doc, HTMLTableKind, c, limit)
}

// parseHTMLTable is ParseHTMLTable for a checked config and a source name.
func parseHTMLTable(doc *goquery.Document, source string, c HTMLTableConfig, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	b := NewBatch(source)
	tables := c.tables(doc)
	if len(tables) == 0 {
		what := "table"
		if c.Table != "" {
			what += " " + strconv.Quote(c.Table)
		}
		if c.TableHeader != "" {
			what += " with header " + strconv.Quote(c.TableHeader)
		}
		return nil, nil, fmt.Errorf("%s: %w (no %s on the page)", source, ErrMarkupChanged, what)
	}
	var missing []string
	used := 0
	for _, t := range tables {
		gt := readTable(t)
		cols, miss := c.columns(gt.headers)
		if len(miss) > 0 {
			if missing == nil {
				missing = miss
			}
			continue
		}
		used++
		for i := range gt.rows {
			htmlTableRow(b, &c, &gt.rows[i], cols, len(gt.headers), limit)
		}
	}
	switch {
	case used == 0:
		return nil, nil, fmt.Errorf("%s: %w (no column %s in the table headers)", source, ErrMarkupChanged, strings.Join(missing, ", "))
	case len(b.Listings) == 0:
		return nil, b.Rejects, fmt.Errorf("%s: %w (%d rows rejected)", source, ErrMarkupChanged, len(b.Rejects))
	}
	return b.Listings, b.Rejects, nil
}

var (
	reCount  = regexp.MustCompile(`\d+`)
	reNumber = regexp.MustCompile(`\d+(?:\.\d+)?`)
)

// htmlTableRow adds the listing of one row to b.
func htmlTableRow(b *Batch, c *HTMLTableConfig, r *gridRow, cols htmlTableColumns, ncols int, limit listings.Price) {
	if r.isSection(ncols) {
		return
	}
	gpuText, priceText := r.cell(cols.gpu), r.cell(cols.price)
	if gpuText == "" && priceText == "" {
		return
	}
	region := r.cell(cols.region)
	model, count, vram, err := parseGPUSpec(gpuText)
	id := ""
	if cols.id >= 0 {
		id = slug(r.cell(cols.id))
	}
	if err != nil {
		b.Rejectf(id, listings.RejectBadRow, "gpu %s: %v", quote(gpuText), err)
		return
	}
	if cols.count >= 0 {
		if ct := r.cell(cols.count); ct != "" {
			m := reCount.FindString(ct)
			n, convErr := strconv.Atoi(m)
			switch {
			case m == "" || convErr != nil || n > maxGPUCount:
				b.Rejectf(id, listings.RejectBadRow, "gpu count %s", quote(ct))
				return
			case count != 1 && count != n:
				b.Rejectf(id, listings.RejectBadRow, "gpu count %d but gpu %s", n, quote(gpuText))
				return
			}
			count = n
		}
	}
	if id == "" && cols.id < 0 {
		id = slug(gpuText, strconv.Itoa(count)+"x", region)
	}
	if count == 0 {
		b.Rejectf(id, listings.RejectZeroGPUs, "gpu %s", quote(gpuText))
		return
	}
	if cols.vram >= 0 {
		if m := reNumber.FindString(r.cell(cols.vram)); m != "" {
			if v, err := strconv.ParseFloat(m, 64); err == nil && v > 0 && v < 1024 {
				vram = v
			}
		}
	}
	pc := parseMoney(priceText, c.Currency)
	reason := pc.reason
	if !pc.offered {
		reason, pc.detail = listings.RejectZeroPrice, "no price"
	}
	var price listings.Price
	if reason == "" {
		n := count
		if c.PerGPU {
			n = 1
		}
		price, reason = perGPUHour(pc.price, n, c.Unit == "monthly", limit)
	}
	if reason != "" {
		b.Rejectf(id, reason, "price %s", quote(priceText))
		return
	}
	kind := listings.OnDemand
	if c.Unit == "monthly" {
		kind = listings.Monthly
	}
	gpu, known := gpuOf(model, vram)
	b.Add(listings.Listing{
		ID:          id,
		GPU:         gpu,
		Known:       known,
		RawGPU:      clipRunes(gpuText, maxPageText),
		GPUCount:    count,
		VRAMGB:      vram,
		Kind:        kind,
		Price:       price,
		Currency:    pc.currency,
		Listed:      listed("price="+quote(priceText), fmt.Sprintf("gpus=%d unit=%s per_gpu=%t", count, c.Unit, c.PerGPU)),
		Region:      clipRunes(region, maxPageText),
		Reliability: -1,
		Available:   !mentionsSoldOut(r.text),
	})
}
