package scrapers

// Helpers shared by the HTML sources (cherryservers, servermania,
// html-table): visible text of a node, tables as grids addressed by header
// text, money and GPU-spec parsing, slugs. None of them looks at class
// names: pages built with CSS modules rename classes at every deploy.

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/listings-dev/listings"
	"golang.org/x/net/html"
)

// ErrMarkupChanged is wrapped by the HTML parsers when a page yields no
// listing: the table or the plan cards they look for are gone or empty,
// which means the page changed, never that the market is empty.
var ErrMarkupChanged = errors.New("0 listings: markup changed?")

// maxPageText is the cap, in runes, on every string kept from a page: page
// text is untrusted (DESIGN §7).
const maxPageText = 200

// Limits that keep hostile tables (huge colspan/rowspan, endless rows) from
// costing more than a real pricing page.
const (
	maxTableRows = 2000
	maxTableCols = 64
	maxRowSpan   = 200
	maxCellText  = 1000 // bytes of raw text read from one cell before cleaning
	maxGPUCount  = 64   // GPUs in one offer; more is a parse error, not a server
)

// cleanText makes untrusted page text safe to keep: invalid UTF-8 replaced,
// control and zero-width characters dropped, runs of white space (NBSP and
// thin spaces included) collapsed to one space, trimmed, and capped at
// maxPageText runes.
func cleanText(s string) string { return squash(s, maxPageText) }

// squash is cleanText with a cap of limit runes, for text that is matched
// rather than kept (a whole row, a plan card).
func squash(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space, n := false, 0
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || r == '\u202f' || r == '\u00a0':
			space = b.Len() > 0
			continue
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || unicode.IsControl(r):
			continue
		}
		if n >= limit {
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// clipRunes caps s at n runes.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// skipElements hold no visible text (or, for del/s/strike, a price that no
// longer applies: "<del>€2,399</del> €2,199").
var skipElements = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true,
	"del": true, "s": true, "strike": true, "head": true,
}

// blockElements separate words: their text is surrounded by a space, while
// inline elements join ("<span>$</span><span>1,499</span>" is "$1,499").
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true,
	"dd": true, "div": true, "dl": true, "dt": true, "figcaption": true, "figure": true,
	"footer": true, "form": true, "h1": true, "h2": true, "h3": true, "h4": true,
	"h5": true, "h6": true, "header": true, "hr": true, "li": true, "main": true,
	"nav": true, "ol": true, "p": true, "section": true, "table": true, "tbody": true,
	"td": true, "tfoot": true, "th": true, "thead": true, "tr": true, "ul": true,
	"caption": true, "button": true, "option": true,
}

// isHidden reports whether n carries the hidden attribute.
func isHidden(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "hidden" {
			return true
		}
	}
	return false
}

// appendText writes the visible text of n to b, stopping once b holds more
// than limit bytes.
func appendText(b *strings.Builder, n *html.Node, limit int) {
	switch n.Type {
	case html.TextNode:
		if room := limit + 1 - b.Len(); room > 0 {
			if len(n.Data) > room {
				b.WriteString(n.Data[:room])
			} else {
				b.WriteString(n.Data)
			}
		}
		return
	case html.ElementNode:
		if skipElements[n.Data] || isHidden(n) {
			return
		}
	case html.DocumentNode:
	default:
		return
	}
	block := n.Type == html.ElementNode && blockElements[n.Data]
	if block {
		b.WriteByte(' ')
	}
	for c := n.FirstChild; c != nil && b.Len() <= limit; c = c.NextSibling {
		appendText(b, c, limit)
	}
	if block {
		b.WriteByte(' ')
	}
}

// nodeText is the visible text of n, read up to limit bytes, squashed and
// capped at limit runes. Values kept from it are capped again (clipRunes
// with maxPageText); ids are slugs of at most 80 runes.
func nodeText(n *html.Node, limit int) string {
	var b strings.Builder
	appendText(&b, n, limit)
	return squash(b.String(), limit)
}

// attr returns the value of n's attribute key.
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// elementByID finds the element with the given id under root.
func elementByID(root *html.Node, id string) *html.Node {
	if id == "" {
		return nil
	}
	var found *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil && found == nil; c = c.NextSibling {
			if c.Type == html.ElementNode && attr(c, "id") == id {
				found = c
				return
			}
			walk(c)
		}
	}
	walk(root)
	return found
}

// documentRoot walks up from n to the document node.
func documentRoot(n *html.Node) *html.Node {
	for n.Parent != nil {
		n = n.Parent
	}
	return n
}

// gridTable is an HTML table as a grid: one header text per column and the
// body rows' cell texts by column, with colspan and rowspan resolved.
type gridTable struct {
	node    *html.Node
	headers []string // cleaned; several header rows are joined per column ("Price Month")
	rows    []gridRow
}

// gridRow is one body row.
type gridRow struct {
	cells  []string // cleaned text per column, "" where the row has none
	ncells int      // th/td elements the row really has
	text   string   // the whole row's text
}

// cell returns the text of column i, "" when i is -1 or out of range.
func (r *gridRow) cell(i int) string {
	if i < 0 || i >= len(r.cells) {
		return ""
	}
	return r.cells[i]
}

// isSection reports whether the row is a caption inside the body (a single
// cell spanning the table: "EU-Nord-1", "Consumer GPUs"), not an offer.
func (r *gridRow) isSection(ncols int) bool { return r.ncells <= 1 && ncols > 1 }

// findTables returns every table element under n, in document order,
// nested ones included.
func findTables(n *html.Node) []*html.Node {
	var out []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.Data == "table" {
				out = append(out, c)
			}
			walk(c)
		}
	}
	walk(n)
	return out
}

// tableRows returns the rows of table t (not of tables nested in it) and
// whether each sits in a thead.
func tableRows(t *html.Node) (rows []*html.Node, inHead []bool) {
	var walk func(n *html.Node, head bool)
	walk = func(n *html.Node, head bool) {
		for c := n.FirstChild; c != nil && len(rows) < maxTableRows; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.Data {
			case "table":
			case "tr":
				rows = append(rows, c)
				inHead = append(inHead, head)
			case "thead":
				walk(c, true)
			default:
				walk(c, head)
			}
		}
	}
	walk(t, false)
	return rows, inHead
}

// rowCells returns the th and td children of a row.
func rowCells(tr *html.Node) []*html.Node {
	var out []*html.Node
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
			out = append(out, c)
		}
	}
	return out
}

// span reads a colspan or rowspan attribute: 1 when absent or invalid,
// capped at max.
func span(n *html.Node, key string, max int) int {
	v, err := strconv.Atoi(strings.TrimSpace(attr(n, key)))
	if err != nil || v < 1 {
		return 1
	}
	if v > max {
		return max
	}
	return v
}

// layout resolves colspan and rowspan for a group of rows (the header rows
// or the body rows). A header cell spanning columns names each of them; a
// body cell spanning columns fills the first only, so that a caption row
// never reads as a GPU in every column.
func layout(rows []*html.Node, header bool) [][]string {
	g := make([][]string, len(rows))
	filled := make([][]bool, len(rows))
	set := func(r, c int, v string) {
		for len(g[r]) <= c {
			g[r] = append(g[r], "")
			filled[r] = append(filled[r], false)
		}
		g[r][c], filled[r][c] = v, true
	}
	for r, tr := range rows {
		col := 0
		for _, c := range rowCells(tr) {
			for col < len(filled[r]) && filled[r][col] {
				col++
			}
			if col >= maxTableCols {
				break
			}
			cs := span(c, "colspan", maxTableCols)
			rs := span(c, "rowspan", maxRowSpan)
			if r+rs > len(rows) {
				rs = len(rows) - r
			}
			text := nodeText(c, maxCellText)
			for dc := 0; dc < cs && col+dc < maxTableCols; dc++ {
				v := text
				if dc > 0 && !header {
					v = ""
				}
				for dr := 0; dr < rs; dr++ {
					set(r+dr, col+dc, v)
				}
			}
			col += cs
		}
	}
	return g
}

// readTable turns table t into a grid. The header rows are the thead's;
// without a thead, the leading rows made of th cells only; without those,
// the first row.
func readTable(t *html.Node) *gridTable {
	rows, inHead := tableRows(t)
	var head, body []*html.Node
	for i, tr := range rows {
		if inHead[i] {
			head = append(head, tr)
		} else {
			body = append(body, tr)
		}
	}
	if len(head) == 0 {
		for len(body) > 0 && allTH(body[0]) {
			head, body = append(head, body[0]), body[1:]
		}
		if len(head) == 0 && len(body) > 0 {
			head, body = body[:1], body[1:]
		}
	}
	gt := &gridTable{node: t}
	hg := layout(head, true)
	for _, row := range hg {
		for c, v := range row {
			for len(gt.headers) <= c {
				gt.headers = append(gt.headers, "")
			}
			if v != "" && !strings.Contains(gt.headers[c], v) {
				gt.headers[c] = strings.TrimSpace(gt.headers[c] + " " + v)
			}
		}
	}
	bg := layout(body, false)
	for i, cells := range bg {
		gt.rows = append(gt.rows, gridRow{
			cells:  cells,
			ncells: len(rowCells(body[i])),
			text:   nodeText(body[i], 4*maxCellText),
		})
	}
	return gt
}

// allTH reports whether a row has cells and all of them are th.
func allTH(tr *html.Node) bool {
	cells := rowCells(tr)
	for _, c := range cells {
		if c.Data != "th" {
			return false
		}
	}
	return len(cells) > 0
}

// foldHeader lower-cases and collapses a header text for matching.
func foldHeader(s string) string { return strings.ToLower(cleanText(s)) }

// headerColumn returns the first column whose header satisfies match, or -1.
func headerColumn(headers []string, match func(h string) bool) int {
	for i, h := range headers {
		if match(foldHeader(h)) {
			return i
		}
	}
	return -1
}

// columnNamed finds the column a config names by its header text: an
// exact match (case-insensitive, white space collapsed) wins over the first
// header containing the name. -1 when none does.
func columnNamed(headers []string, name string) int {
	want := foldHeader(name)
	if want == "" {
		return -1
	}
	for i, h := range headers {
		if foldHeader(h) == want {
			return i
		}
	}
	return headerColumn(headers, func(h string) bool { return strings.Contains(h, want) })
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// Money.
//
// Accepted number formats (the locales of the hosting pages we read):
//   - English: "1,234.56", "1234.56", "$1,099";
//   - continental European: "1.234,56", "1 234,56" (space, NBSP or thin
//     space between groups), "0,85";
//   - Swiss: "1'234.56".
//
// Where one separator could be either, a single "." is a decimal point
// ("€1.234" is 1.234), and a single "," followed by exactly three digits
// after a non-zero group is a thousands separator ("$1,099" is 1099) while
// any other single "," is a decimal comma ("12,50", "0,845"). Several
// numbers in one cell are ambiguous unless exactly one of them touches a
// currency sign or code ("€1.69 per hour (min. 24 h)"). Anything else
// rejects the row (bad price), never the page.

var (
	reAmount   = regexp.MustCompile(`\d{1,3}(?:[ '’]\d{3})+(?:[.,]\d{1,6})?|\d[\d.,]*\d|\d`)
	reCurrency = regexp.MustCompile(`€|\$|£|\b(?:USD|EUR|GBP|CAD|AUD|NZD|CHF|SEK|NOK|DKK|PLN|SGD|HKD|JPY|INR)\b`)
	reDigit    = regexp.MustCompile(`\d`)
	reDashOnly = regexp.MustCompile(`^(?i:[-–—−/ ]*|n/?a|none|not available|—)$`)
)

// priceCell is the outcome of reading a price cell.
type priceCell struct {
	price    listings.Price // the amount as listed (whole machine, per its unit)
	currency string
	offered  bool   // false: the cell says the kind is not offered ("–", empty)
	reason   string // a listings.Reject* reason when the cell has no usable price
	detail   string
}

// parseMoney reads the one amount in a price cell. def is the currency
// assumed when the cell names none, and the dollar currency "$" means when
// def is one (CAD, AUD ...); otherwise "$" is USD.
func parseMoney(text, def string) priceCell {
	t := cleanText(text)
	if reDashOnly.MatchString(t) {
		return priceCell{}
	}
	pc := priceCell{offered: true, detail: clipRunes(t, 60)}
	if !reDigit.MatchString(t) {
		pc.reason = listings.RejectZeroPrice
		pc.detail = "no price: " + pc.detail
		return pc
	}
	nums := reAmount.FindAllStringIndex(t, -1)
	curs := reCurrency.FindAllStringIndex(t, -1)
	pick, cur := -1, ""
	for i, m := range nums {
		if c, ok := touchingCurrency(t, m, curs); ok {
			if pick >= 0 {
				pc.reason, pc.detail = listings.RejectBadPrice, "several amounts: "+pc.detail
				return pc
			}
			pick, cur = i, c
		}
	}
	if pick < 0 {
		if len(nums) != 1 {
			pc.reason, pc.detail = listings.RejectBadPrice, "several amounts: "+pc.detail
			return pc
		}
		pick = 0
	}
	m := nums[pick]
	if negative(t[:m[0]]) {
		pc.reason = listings.RejectNegative
		return pc
	}
	plain, ok := plainDecimal(t[m[0]:m[1]])
	if !ok {
		pc.reason = listings.RejectBadPrice
		return pc
	}
	p, err := listings.ParsePrice(plain)
	switch {
	case err != nil:
		pc.reason = listings.RejectBadPrice
		return pc
	case p <= 0:
		pc.reason = listings.RejectZeroPrice
		return pc
	}
	pc.price = p
	pc.currency = currencyCode(cur, def)
	return pc
}

// negative reports whether the text before an amount ends in a minus sign,
// possibly followed by a currency sign ("-€5", "− 5").
func negative(before string) bool {
	b := strings.TrimRight(before, " ")
	b = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(b, "€"), "$"), "£")
	b = strings.TrimRight(b, " ")
	return strings.HasSuffix(b, "-") || strings.HasSuffix(b, "−")
}

// touchingCurrency returns the currency marker within two bytes before or
// after the number at m.
func touchingCurrency(t string, m []int, curs [][]int) (string, bool) {
	for _, c := range curs {
		gapBefore := m[0] - c[1]
		gapAfter := c[0] - m[1]
		if (gapBefore >= 0 && gapBefore <= 2 && strings.TrimSpace(t[c[1]:m[0]]) == "") ||
			(gapAfter >= 0 && gapAfter <= 2 && strings.TrimSpace(t[m[1]:c[0]]) == "") {
			return t[c[0]:c[1]], true
		}
	}
	return "", false
}

// currencyCode maps a currency marker to an ISO code; "" means def.
func currencyCode(marker, def string) string {
	def = strings.ToUpper(strings.TrimSpace(def))
	switch marker {
	case "":
		if def == "" {
			return listings.USD
		}
		return def
	case "€":
		return "EUR"
	case "£":
		return "GBP"
	case "$":
		if len(def) == 3 && strings.HasSuffix(def, "D") {
			return def
		}
		return listings.USD
	}
	return marker
}

// plainDecimal rewrites a listed number as a plain decimal ("1,234.56" →
// "1234.56", "1.234,56" → "1234.56") by the rules above.
func plainDecimal(num string) (string, bool) {
	s := strings.NewReplacer(" ", "", "'", "", "’", "").Replace(num)
	grouped := s != num
	dots, commas := strings.Count(s, "."), strings.Count(s, ",")
	switch {
	case dots == 0 && commas == 0:
		return s, true
	case grouped:
		if dots+commas != 1 {
			return "", false
		}
		return strings.Replace(s, ",", ".", 1), true
	case dots > 0 && commas > 0:
		last := max(strings.LastIndexByte(s, '.'), strings.LastIndexByte(s, ','))
		dec := s[last]
		th := byte(',')
		if dec == ',' {
			th = '.'
		}
		if strings.Count(s, string(dec)) != 1 || !groupsOf3(s[:last], th) {
			return "", false
		}
		return strings.ReplaceAll(s[:last], string(th), "") + "." + s[last+1:], true
	case commas > 0:
		if groupsOf3(s, ',') && s[0] != '0' {
			return strings.ReplaceAll(s, ",", ""), true
		}
		if commas == 1 {
			return strings.Replace(s, ",", ".", 1), true
		}
	case dots == 1:
		return s, true
	default:
		if groupsOf3(s, '.') && s[0] != '0' {
			return strings.ReplaceAll(s, ".", ""), true
		}
	}
	return "", false
}

// groupsOf3 reports whether s is digits grouped by sep as thousands: a
// first group of one to three digits, then groups of exactly three.
func groupsOf3(s string, sep byte) bool {
	parts := strings.Split(s, string(sep))
	if len(parts) < 2 || len(parts[0]) < 1 || len(parts[0]) > 3 {
		return false
	}
	for i, p := range parts {
		if i > 0 && len(p) != 3 {
			return false
		}
		for j := 0; j < len(p); j++ {
			if p[j] < '0' || p[j] > '9' {
				return false
			}
		}
	}
	return true
}

// perGPUHour turns a listed price into the price per GPU-hour: a monthly
// price is spread over listings.HoursPerMonth hours, a whole-machine price
// divided by its GPUs, exactly (one rounding, to the micro-unit). The
// reason is non-empty when the result cannot be a listing price.
func perGPUHour(p listings.Price, gpus int, monthly bool, limit listings.Price) (listings.Price, string) {
	if limit <= 0 {
		limit = DefaultPriceCap
	}
	den := int64(gpus)
	if monthly {
		den *= listings.HoursPerMonth
	}
	v := p.MulDiv(1, den)
	switch {
	case v < 0:
		return 0, listings.RejectNegative
	case v == 0:
		return 0, listings.RejectZeroPrice
	case v > limit:
		return 0, listings.RejectAboveCap
	}
	return v, ""
}

// GPU specs.

var (
	reSpecLabel  = regexp.MustCompile(`(?i)^(?:gpus?|graphics(?:\s+cards?)?|gpu\s+model|accelerators?)\s*[:：]\s*`)
	reCountX     = regexp.MustCompile(`^(\d+)\s*[x×]\s*(.*)$`)
	reCountWord  = regexp.MustCompile(`(?i)^(single|dual|twin|double|triple|quad|quadruple|hexa|octa|octo)\b[\s-]*(.*)$`)
	reCountLead  = regexp.MustCompile(`^(\d{1,2})\s+([A-Za-z].*)$`)
	reCountTail  = regexp.MustCompile(`(?i)^(.*?\S)\s+(?:[x×]\s*(\d+)|\(\s*(\d+)\s*[x×]\s*\))$`)
	reVRAM       = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*GB\b`)
	reNotGPUUnit = regexp.MustCompile(`(?i)^(?:gb|tb|mb|gib|tib|cores?|vcpus?|threads)\b`)
)

var countWords = map[string]int{
	"single": 1, "dual": 2, "twin": 2, "double": 2, "triple": 3,
	"quad": 4, "quadruple": 4, "hexa": 6, "octa": 8, "octo": 8,
}

// parseGPUSpec reads a GPU description as hosting pages write it: "2x
// NVIDIA RTX A6000 48GB", "8 x H100", "2× A40", "Dual RTX 4090", "RTX
// A6000 x2", "GPU: 1x RTX 4090 24GB". It returns the model text (count and
// label removed, memory kept so the normaliser can tell A100 40GB from
// 80GB), the GPU count (1 when none is written; 0 when the page says 0) and
// the memory per GPU in GB (0 when not written). An empty model or a count
// above maxGPUCount is an error.
func parseGPUSpec(s string) (model string, count int, vramGB float64, err error) {
	t := cleanText(s)
	t = strings.TrimSpace(reSpecLabel.ReplaceAllString(t, ""))
	count = 1
	n := ""
	switch m := reCountX.FindStringSubmatch(t); {
	case m != nil:
		n, t = m[1], m[2]
	default:
		if m := reCountWord.FindStringSubmatch(t); m != nil {
			count, t = countWords[strings.ToLower(m[1])], m[2]
		} else if m := reCountLead.FindStringSubmatch(t); m != nil && !reNotGPUUnit.MatchString(m[2]) {
			n, t = m[1], m[2]
		} else if m := reCountTail.FindStringSubmatch(t); m != nil {
			n, t = m[2]+m[3], m[1]
		}
	}
	if n != "" {
		v, convErr := strconv.Atoi(n)
		if convErr != nil || v > maxGPUCount {
			return "", 0, 0, errors.New("gpu count out of range: " + clipRunes(n, 12))
		}
		count = v
	}
	model = strings.Trim(strings.TrimSpace(t), ",;·-–")
	model = strings.TrimSpace(model)
	if model == "" || !strings.ContainsFunc(model, unicode.IsLetter) {
		return "", 0, 0, errors.New("no gpu model")
	}
	if m := reVRAM.FindStringSubmatch(model); m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && v > 0 && v < 1024 {
			vramGB = v
		}
	}
	return clipRunes(model, maxPageText), count, vramGB, nil
}

// reDisk matches one disk size: "2x 1.92TB", "960GB", "4 TB".
var reDisk = regexp.MustCompile(`(?i)(?:(\d{1,2})\s*[x×]\s*)?(\d+(?:\.\d+)?)\s*(TB|GB)\b`)

// parseDiskGB sums the disks of a storage description ("2x 1.92TB NVMe +
// 4TB HDD" is 7840) in GB (1 TB = 1000 GB, as hosts sell them). 0 when
// none is written.
func parseDiskGB(s string) float64 {
	total := 0.0
	for _, m := range reDisk.FindAllStringSubmatch(cleanText(s), 16) {
		n := 1.0
		if m[1] != "" {
			n, _ = strconv.ParseFloat(m[1], 64)
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		if strings.EqualFold(m[3], "TB") {
			v *= 1000
		}
		total += n * v
	}
	return total
}

// soldOut reports whether a stock cell says the offer cannot be rented now
// ("Out of stock", "Sold out", "0", "0 available").
func soldOut(s string) bool {
	t := strings.ToLower(squash(s, len(s)))
	return mentionsSoldOut(t) || t == "0" || strings.HasPrefix(t, "0 ")
}

// mentionsSoldOut reports whether a longer text (a row, a plan card) says
// the offer is sold out.
func mentionsSoldOut(s string) bool {
	t := strings.ToLower(squash(s, len(s)))
	return containsAny(t, "out of stock", "sold out", "soldout", "unavailable", "not available", "no stock", "notify me")
}

// slug makes a stable id from a server or plan name: lower-case letters and
// digits, every other run of characters one "-", at most 80 runes. "Dual
// RTX A6000" is "dual-rtx-a6000".
func slug(parts ...string) string {
	var b strings.Builder
	dash := false
	n := 0
	for _, r := range strings.ToLower(cleanText(strings.Join(parts, " "))) {
		if n >= 80 {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
				n++
			}
			dash = false
			b.WriteRune(r)
			n++
			continue
		}
		dash = true
	}
	return strings.TrimRight(b.String(), "-")
}

// gpuOf normalises a model text through the catalog.
func gpuOf(model string, vramGB float64) (string, bool) {
	name, known := listings.Normalize(model, vramGB)
	return clipRunes(name, maxPageText), known
}

// listed formats the audit text of a listing, capped like any page text.
func listed(parts ...string) string { return clipRunes(strings.Join(parts, " "), maxPageText) }

// quote formats a page value for the audit text.
func quote(s string) string { return strconv.Quote(clipRunes(cleanText(s), 60)) }
