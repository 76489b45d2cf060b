package scrapers

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/listings-dev/listings"
	"golang.org/x/net/html"
)

// CherryServersURL is Cherry Servers' public GPU dedicated-server page, the
// default of source "cherryservers" (overridable by the config's url and
// --source-url).
const CherryServersURL = "https://www.cherryservers.com/dedicated-gpu-servers"

// CherryServers collects the GPU dedicated servers of Cherry Servers
// (source "cherryservers", enabled by default) from their HTML pricing
// table; see ParseCherryServers for the rules.
type CherryServers struct{}

func init() { Register(CherryServers{}, true) }

// Name returns "cherryservers".
func (CherryServers) Name() string { return "cherryservers" }

// DefaultURL returns CherryServersURL.
func (CherryServers) DefaultURL() string { return CherryServersURL }

// Collect fetches env.URL through the polite colly layer (robots.txt
// honoured, size limit enforced) and parses it.
func (CherryServers) Collect(ctx context.Context, env *Env) (*Result, error) {
	doc, err := FetchHTML(ctx, env.Client, env.URL)
	if err != nil {
		return nil, fmt.Errorf("cherryservers: fetch page: %w", err)
	}
	ls, rejects, err := ParseCherryServers(doc, env.PriceCap)
	return &Result{Listings: ls, Rejects: rejects}, err
}

// Header texts of hourly and monthly price columns: "Price / hour",
// "Hourly", "€/h", "Price / month", "Monthly", "$/mo".
var (
	reHourHeader  = regexp.MustCompile(`\bhour|/\s*h(?:r|our)?\b`)
	reMonthHeader = regexp.MustCompile(`\bmonth|/\s*mo\b`)
)

// cherryColumns are the columns of a pricing table, found by header text
// (case-insensitive "contains"); -1 when absent.
type cherryColumns struct {
	name, gpu, month, hour, stock, storage, vram, region int
}

// cherryTableColumns finds the columns of a GPU pricing table; ok is false
// when the table has no GPU column or no price column.
func cherryTableColumns(headers []string) (c cherryColumns, ok bool) {
	isPrice := func(h string) bool { return containsAny(h, "price", "cost", "€", "$") }
	isHour := reHourHeader.MatchString
	isMonth := reMonthHeader.MatchString
	c.gpu = headerColumn(headers, func(h string) bool {
		return strings.Contains(h, "gpu") && !isPrice(h) && !isHour(h) && !isMonth(h) && !containsAny(h, "memory", "vram")
	})
	c.hour = headerColumn(headers, isHour)
	c.month = headerColumn(headers, func(h string) bool { return isMonth(h) && !isHour(h) })
	if c.month < 0 {
		// A lone "Price" column on a dedicated-server page is monthly.
		c.month = headerColumn(headers, func(h string) bool { return isPrice(h) && !isHour(h) })
	}
	c.name = headerColumn(headers, func(h string) bool {
		return containsAny(h, "server", "plan", "name", "configuration", "model") && !strings.Contains(h, "gpu")
	})
	c.stock = headerColumn(headers, func(h string) bool { return containsAny(h, "stock", "availab") })
	c.storage = headerColumn(headers, func(h string) bool { return containsAny(h, "storage", "disk", "drive") })
	c.vram = headerColumn(headers, func(h string) bool { return containsAny(h, "vram", "gpu memory", "video memory") })
	c.region = headerColumn(headers, func(h string) bool { return containsAny(h, "location", "region", "data center", "datacenter") })
	return c, c.gpu >= 0 && (c.month >= 0 || c.hour >= 0)
}

// ParseCherryServers parses Cherry Servers' GPU server page. It reads every
// table whose header row has a GPU column and a price column, by header
// text only (never class names): "Server" (name), "GPU", "Price / month",
// "Price / hour", "Stock", "Storage", and, where present, a VRAM and a
// location column. Rows spanning the whole table (captions) are skipped.
//
// Each server row gives a listing of kind monthly at the monthly price /
// 730 / GPUs, and one of kind on-demand at the hourly price / GPUs where an
// hourly price is listed; "–" or an empty cell means the kind is not
// offered. Prices are EUR unless the cell names another currency (see
// parseMoney for the accepted number formats); EUR stays EUR, the
// statistics convert it with the configured fx rate. A stock cell saying
// "Out of stock" (or "Sold out", "0") gives Available false.
//
// The id is a slug of the server name ("Dual RTX A6000" is
// "dual-rtx-a6000"; the GPU text when there is no name column), followed by
// the location when the page names one in a column or in the tab that holds
// the table, so one plan in two locations is two listings.
//
// Rows without a usable price ("Call us"), without a GPU, or with zero GPUs
// are rejected with a reason; the rest are kept. A page without such a
// table, or whose tables yield no listing, is an error wrapping
// ErrMarkupChanged.
func ParseCherryServers(doc *goquery.Document, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	b := NewBatch("cherryservers")
	tables := 0
	for _, root := range doc.Nodes {
		for _, t := range findTables(root) {
			gt := readTable(t)
			cols, ok := cherryTableColumns(gt.headers)
			if !ok {
				continue
			}
			tables++
			region := tabLabel(t)
			for i := range gt.rows {
				cherryRow(b, &gt.rows[i], cols, len(gt.headers), region, limit)
			}
		}
	}
	switch {
	case tables == 0:
		return nil, b.Rejects, fmt.Errorf("cherryservers: %w (no table with gpu and price headers)", ErrMarkupChanged)
	case len(b.Listings) == 0:
		return nil, b.Rejects, fmt.Errorf("cherryservers: %w (%d rows rejected)", ErrMarkupChanged, len(b.Rejects))
	}
	return b.Listings, b.Rejects, nil
}

// tabLabel returns the label of the tab panel holding n (role="tabpanel"
// with aria-labelledby), which on hosting pages names the location.
func tabLabel(n *html.Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && attr(p, "role") == "tabpanel" {
			if l := elementByID(documentRoot(p), attr(p, "aria-labelledby")); l != nil {
				return nodeText(l, maxCellText)
			}
			return cleanText(attr(p, "aria-label"))
		}
	}
	return ""
}

// cherryRow adds the listings of one table row to b.
func cherryRow(b *Batch, r *gridRow, cols cherryColumns, ncols int, tabRegion string, limit listings.Price) {
	if r.isSection(ncols) {
		return
	}
	gpuText, monthText, hourText := r.cell(cols.gpu), r.cell(cols.month), r.cell(cols.hour)
	if gpuText == "" && monthText == "" && hourText == "" {
		return // a spacer row
	}
	name := r.cell(cols.name)
	if name == "" {
		name = gpuText
	}
	region := r.cell(cols.region)
	if region == "" {
		region = tabRegion
	}
	id := slug(name, region)
	model, count, vram, err := parseGPUSpec(gpuText)
	switch {
	case err != nil:
		b.Rejectf(id, listings.RejectBadRow, "gpu %s: %v", quote(gpuText), err)
		return
	case count == 0:
		b.Rejectf(id, listings.RejectZeroGPUs, "gpu %s", quote(gpuText))
		return
	}
	if v := r.cell(cols.vram); v != "" {
		if _, _, vv, err := parseGPUSpec("1x GPU " + v); err == nil && vv > 0 {
			vram = vv
		}
	}
	gpu, known := gpuOf(model, vram)
	base := listings.Listing{
		ID:          id,
		GPU:         gpu,
		Known:       known,
		RawGPU:      clipRunes(gpuText, maxPageText),
		GPUCount:    count,
		VRAMGB:      vram,
		Region:      clipRunes(region, maxPageText),
		Reliability: -1,
		DiskGB:      parseDiskGB(r.cell(cols.storage)),
		Available:   cols.stock < 0 || !soldOut(r.cell(cols.stock)),
	}
	kinds := []struct {
		kind    listings.Kind
		text    string
		monthly bool
		field   string
	}{
		{listings.Monthly, monthText, true, "price_month"},
		{listings.OnDemand, hourText, false, "price_hour"},
	}
	type failure struct{ reason, detail string }
	var failed []failure
	added := 0
	for _, k := range kinds {
		if (k.monthly && cols.month < 0) || (!k.monthly && cols.hour < 0) {
			continue
		}
		pc := parseMoney(k.text, "EUR")
		if !pc.offered {
			continue
		}
		reason := pc.reason
		var price listings.Price
		if reason == "" {
			price, reason = perGPUHour(pc.price, count, k.monthly, limit)
		}
		if reason != "" {
			failed = append(failed, failure{reason, k.field + " " + quote(k.text)})
			continue
		}
		l := base
		l.Kind, l.Price, l.Currency = k.kind, price, pc.currency
		l.Listed = listed(k.field+"="+quote(k.text), fmt.Sprintf("gpus=%d", count))
		b.Add(l)
		added++
	}
	switch {
	case added == 0 && len(failed) == 0:
		b.Reject(id, listings.RejectZeroPrice, "no price")
	case added == 0:
		details := make([]string, len(failed))
		for i, f := range failed {
			details[i] = f.detail
		}
		b.Reject(id, failed[0].reason, strings.Join(details, ", "))
	default:
		for _, f := range failed {
			b.Reject(id, f.reason, f.detail)
		}
	}
}
