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

// ServerManiaURL is ServerMania's public GPU dedicated-server page, the
// default of source "servermania" (overridable by the config's url and
// --source-url).
const ServerManiaURL = "https://www.servermania.com/gpu-servers.htm"

// ServerMania collects the GPU dedicated servers of ServerMania (source
// "servermania", enabled by default) from the plan cards of its HTML page;
// see ParseServerMania for the rules.
type ServerMania struct{}

func init() { Register(ServerMania{}, true) }

// Name returns "servermania".
func (ServerMania) Name() string { return "servermania" }

// DefaultURL returns ServerManiaURL.
func (ServerMania) DefaultURL() string { return ServerManiaURL }

// Collect fetches env.URL through the polite colly layer (robots.txt
// honoured, size limit enforced) and parses it.
func (ServerMania) Collect(ctx context.Context, env *Env) (*Result, error) {
	doc, err := FetchHTML(ctx, env.Client, env.URL)
	if err != nil {
		return nil, fmt.Errorf("servermania: fetch page: %w", err)
	}
	ls, rejects, err := ParseServerMania(doc, env.PriceCap)
	return &Result{Listings: ls, Rejects: rejects}, err
}

var (
	// reMonthlyPrice is a monthly plan price: "$1,099/mo", "$1,499.99 /
	// month", "USD 549 per month", "1.099 € monthly".
	reMonthlyPrice = regexp.MustCompile(`(?i)(?:(?:[$€£]|\b(?:USD|EUR|GBP|CAD)\b)\s*\d[\d,.]*|\d[\d,.]*\s*(?:[$€£]|\b(?:USD|EUR|GBP|CAD)\b))\s*(?:/\s*mo(?:nth)?\b|per\s+month\b|a\s+month\b|monthly\b)`)
	// reGPULine is a labelled GPU spec: "GPU: 2x RTX 4090 24GB".
	reGPULine = regexp.MustCompile(`(?i)^(?:gpus?|graphics(?:\s+cards?)?|gpu\s+model)\s*[:：]\s*(\S.*)$`)
	// reGPULabel is a label alone, its value in the next element
	// ("<dt>GPU</dt><dd>2x RTX 4090</dd>").
	reGPULabel = regexp.MustCompile(`(?i)^(?:gpus?|graphics(?:\s+cards?)?|gpu\s+model)\s*[:：]?$`)
	// Other labelled specs of a plan.
	reLocationLine = regexp.MustCompile(`(?i)^(?:locations?|regions?|data\s*cent(?:er|re)s?)\s*[:：]\s*(\S.*)$`)
	reStorageLine  = regexp.MustCompile(`(?i)^(?:storage|disks?|drives?)\s*[:：]\s*(\S.*)$`)
)

// maxShortText bounds the text kept per element while scanning cards: a
// price or a spec line is short, and the bound keeps the scan linear.
const maxShortText = 300

// cardScan is one pass over a page: the short text of each element, which
// elements hold a heading, and the price and GPU-spec anchors.
type cardScan struct {
	texts      map[*html.Node]string // elements whose visible text is at most maxShortText bytes
	hasHeading map[*html.Node]bool
	elements   []*html.Node // document order
	prices     []*html.Node
	gpus       []gpuAnchor
	priceCount map[*html.Node]int // price anchors in each element's subtree
}

// gpuAnchor is an element holding a GPU spec and the spec text.
type gpuAnchor struct {
	node *html.Node
	spec string
}

// scanCards walks root.
func scanCards(root *html.Node) *cardScan {
	s := &cardScan{texts: map[*html.Node]string{}, hasHeading: map[*html.Node]bool{}, priceCount: map[*html.Node]int{}}
	s.walk(root)
	for _, e := range s.elements {
		t, short := s.texts[e]
		if !short || t == "" {
			continue
		}
		if reMonthlyPrice.MatchString(t) && !s.childMatches(e, reMonthlyPrice) {
			s.prices = append(s.prices, e)
			for p := e; p != nil; p = p.Parent {
				s.priceCount[p]++
			}
		}
		if m := reGPULine.FindStringSubmatch(t); m != nil && !s.childMatches(e, reGPULine) {
			s.gpus = append(s.gpus, gpuAnchor{e, m[1]})
		} else if reGPULabel.MatchString(t) {
			for sib := e.NextSibling; sib != nil; sib = sib.NextSibling {
				if sib.Type == html.ElementNode {
					if v := s.texts[sib]; v != "" {
						s.gpus = append(s.gpus, gpuAnchor{sib, v})
					}
					break
				}
			}
		}
	}
	return s
}

// walk records n's subtree and returns its raw text (long is true past
// maxShortText bytes).
func (s *cardScan) walk(n *html.Node) (text string, long bool) {
	switch n.Type {
	case html.TextNode:
		return n.Data, len(n.Data) > maxShortText
	case html.ElementNode:
		if skipElements[n.Data] || isHidden(n) || n.Data == "nav" {
			return "", false
		}
		if (n.Data == "header" || n.Data == "footer") && n.Parent != nil && n.Parent.Data == "body" {
			return "", false // the site's own header and footer
		}
		s.elements = append(s.elements, n)
	case html.DocumentNode:
	default:
		return "", false
	}
	var b strings.Builder
	block := n.Type == html.ElementNode && blockElements[n.Data]
	if block {
		b.WriteByte(' ')
	}
	heading := n.Type == html.ElementNode && (isHeadingTag(n.Data) || attr(n, "role") == "heading")
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		t, l := s.walk(c)
		if s.hasHeading[c] {
			heading = true
		}
		if long || l || b.Len()+len(t) > maxShortText {
			long = true
			continue
		}
		b.WriteString(t)
	}
	if block {
		b.WriteByte(' ')
	}
	if heading {
		s.hasHeading[n] = true
	}
	if long {
		return "", true
	}
	if n.Type == html.ElementNode {
		s.texts[n] = squash(b.String(), maxShortText)
	}
	return b.String(), false
}

// childMatches reports whether an element child of e has short text
// matching re (then the child, not e, is the anchor).
func (s *cardScan) childMatches(e *html.Node, re *regexp.Regexp) bool {
	for c := e.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && re.MatchString(s.texts[c]) {
			return true
		}
	}
	return false
}

func isHeadingTag(tag string) bool {
	return len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6'
}

// container is the plan block of an anchor: its nearest ancestor holding a
// heading. nil when none does.
func (s *cardScan) container(n *html.Node) *html.Node {
	for p := n.Parent; p != nil; p = p.Parent {
		if s.hasHeading[p] {
			return p
		}
	}
	return nil
}

// firstHeading returns the text of the first heading in n's subtree.
func (s *cardScan) firstHeading(n *html.Node) string {
	var found string
	var walk func(n *html.Node) bool
	walk = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || !s.hasHeading[c] {
				continue
			}
			if isHeadingTag(c.Data) || attr(c, "role") == "heading" {
				found = nodeText(c, maxCellText)
				return true
			}
			if walk(c) {
				return true
			}
		}
		return false
	}
	walk(n)
	return found
}

// labelled returns the value of the first spec line under n matching re.
func (s *cardScan) labelled(n *html.Node, re *regexp.Regexp) string {
	var found string
	var walk func(n *html.Node) bool
	walk = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if m := re.FindStringSubmatch(s.texts[c]); m != nil && !s.childMatches(c, re) {
				found = m[1]
				return true
			}
			if walk(c) {
				return true
			}
		}
		return false
	}
	walk(n)
	return found
}

// plan is the anchors found in one plan block.
type plan struct {
	block  *html.Node
	prices []*html.Node
	gpus   []gpuAnchor
}

// ParseServerMania parses ServerMania's GPU server page, laid out as plan
// cards. It never relies on class names: it finds, by their text, the
// monthly prices ("$1,099/mo", "$1,499.99 per month"; struck-out old prices
// ignored) and the GPU spec lines ("GPU: 2x RTX 4090 24GB", or a "GPU"
// label followed by its value), and groups them by plan block: the nearest
// ancestor that holds a heading. The heading is the plan's name; the GPU
// comes from the spec line, or from the heading ("Dual NVIDIA RTX 4090")
// when there is no spec line and the heading names a catalog GPU.
//
// Each plan is one listing of kind monthly at the price / 730 / GPUs, in
// USD unless the price names another currency. "Location:" and "Storage:"
// lines give Region and DiskGB; a plan block saying "Sold out" or "Out of
// stock" gives Available false. The id is a slug of the plan name and the
// location ("dual-nvidia-rtx-4090-buffalo-ny").
//
// A plan block with a GPU but no monthly price ("Contact sales"), without a
// GPU, with zero GPUs, or holding several prices (cards without headings
// inside a section) is rejected with a reason. A page without any plan, or
// whose plans yield no listing, is an error wrapping ErrMarkupChanged.
func ParseServerMania(doc *goquery.Document, limit listings.Price) ([]listings.Listing, []listings.Reject, error) {
	b := NewBatch("servermania")
	var plans []*plan
	byBlock := map[*html.Node]*plan{}
	for _, root := range doc.Nodes {
		s := scanCards(root)
		get := func(n *html.Node) *plan {
			blk := s.container(n)
			if p := byBlock[blk]; p != nil && blk != nil {
				return p
			}
			p := &plan{block: blk}
			plans = append(plans, p)
			if blk != nil {
				byBlock[blk] = p
			}
			return p
		}
		for _, n := range s.prices {
			p := get(n)
			p.prices = append(p.prices, n)
		}
		for _, g := range s.gpus {
			p := get(g.node)
			p.gpus = append(p.gpus, g)
		}
		for _, p := range plans {
			serverManiaPlan(b, s, p, limit)
		}
		plans = plans[:0]
	}
	if len(b.Listings) == 0 {
		return nil, b.Rejects, fmt.Errorf("servermania: %w (%d plan cards rejected)", ErrMarkupChanged, len(b.Rejects))
	}
	return b.Listings, b.Rejects, nil
}

// serverManiaPlan adds the listing of one plan block to b.
func serverManiaPlan(b *Batch, s *cardScan, p *plan, limit listings.Price) {
	if p.block == nil {
		for _, n := range p.prices {
			b.Rejectf("", listings.RejectBadRow, "price %s outside any plan card", quote(s.texts[n]))
		}
		return
	}
	name := s.firstHeading(p.block)
	region := cleanText(s.labelled(p.block, reLocationLine))
	id := slug(name, region)
	if n := s.priceCount[p.block]; n > 1 {
		b.Rejectf(id, listings.RejectBadRow, "%d prices in one plan block", n)
		return
	}
	if len(p.prices) == 0 {
		b.Reject(id, listings.RejectZeroPrice, "no monthly price in the plan card")
		return
	}
	priceText := s.texts[p.prices[0]]
	spec := ""
	if len(p.gpus) > 0 {
		spec = p.gpus[0].spec
	} else if m, _, _, err := parseGPUSpec(name); err == nil {
		if _, known := listings.Normalize(m, 0); known {
			spec = name
		}
	}
	if spec == "" {
		b.Reject(id, listings.RejectBadRow, "no gpu in the plan card")
		return
	}
	model, count, vram, err := parseGPUSpec(spec)
	switch {
	case err != nil:
		b.Rejectf(id, listings.RejectBadRow, "gpu %s: %v", quote(spec), err)
		return
	case count == 0:
		b.Rejectf(id, listings.RejectZeroGPUs, "gpu %s", quote(spec))
		return
	}
	pc := parseMoney(priceText, listings.USD)
	reason := pc.reason
	var price listings.Price
	if reason == "" {
		price, reason = perGPUHour(pc.price, count, true, limit)
	}
	if reason != "" {
		b.Rejectf(id, reason, "price %s", quote(priceText))
		return
	}
	gpu, known := gpuOf(model, vram)
	b.Add(listings.Listing{
		ID:          id,
		GPU:         gpu,
		Known:       known,
		RawGPU:      clipRunes(cleanText(spec), maxPageText),
		GPUCount:    count,
		VRAMGB:      vram,
		Kind:        listings.Monthly,
		Price:       price,
		Currency:    pc.currency,
		Listed:      listed("price="+quote(priceText), fmt.Sprintf("gpus=%d", count)),
		Region:      clipRunes(region, maxPageText),
		Reliability: -1,
		DiskGB:      parseDiskGB(s.labelled(p.block, reStorageLine)),
		Available:   !mentionsSoldOut(nodeText(p.block, 4*maxCellText)),
	})
}
