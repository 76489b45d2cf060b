package scrapers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/gocolly/colly/v2"
)

// ErrRobotsDisallowed is returned (wrapped) by FetchHTML when the site's
// robots.txt forbids the page to our User-Agent.
var ErrRobotsDisallowed = errors.New("robots.txt disallows URL")

// robotsDisallowAll is what a robots.txt that answered 5xx or 429 means:
// the site is not ready to be crawled (Google's rule, which temoto/robotstxt
// implements but colly v2.3.0 loses: its checkRobots asks FindGroup of the
// "disallow all" data, finds no group and allows everything).
const robotsDisallowAll = "User-agent: *\nDisallow: /\n"

// Colly returns a colly collector for the HTML sources that goes through
// c's polite transport (host gate, retries, timeouts, size limit, stats)
// and:
//   - sends c's User-Agent;
//   - honours robots.txt (IgnoreRobotsTxt false; a 4xx robots.txt allows
//     everything, a 5xx or 429 one, after retries, disallows everything);
//   - has no MaxBodySize (colly truncates silently at it): the transport's
//     MaxBodyBytes makes reading an oversized page fail instead;
//   - ignores COLLY_* environment variables: it is built with Init, which
//     sets the defaults, rather than NewCollector, which applies them;
//   - sends every request, robots.txt included, under ctx.
func (c *Client) Colly(ctx context.Context) *colly.Collector {
	col := &colly.Collector{}
	col.Init()
	col.UserAgent = c.opts.UserAgent
	col.IgnoreRobotsTxt = false
	col.MaxBodySize = 0
	col.Context = ctx
	// Each attempt has its own timeout in the transport; the run's deadline
	// is ctx. colly's whole-request timeout would cut retries short.
	col.SetRequestTimeout(0)
	col.WithTransport(&collyTransport{ctx: ctx, rt: c.rt})
	return col
}

// collyTransport adapts the polite transport to colly: requests colly makes
// without a context (its robots.txt fetch) get the run's, and a robots.txt
// that fails with 5xx or 429 reads as "disallow all".
type collyTransport struct {
	ctx context.Context
	rt  http.RoundTripper
}

func (t *collyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Done() == nil {
		req = req.WithContext(t.ctx)
	}
	resp, err := t.rt.RoundTrip(req)
	if err != nil || req.URL.Path != "/robots.txt" || !retryStatus(resp.StatusCode) {
		return resp, err
	}
	resp.Body.Close()
	return &http.Response{
		Status:        "200 OK (robots.txt answered " + resp.Status + ": disallow all)",
		StatusCode:    http.StatusOK,
		Proto:         resp.Proto,
		ProtoMajor:    resp.ProtoMajor,
		ProtoMinor:    resp.ProtoMinor,
		Header:        http.Header{"Content-Type": {"text/plain"}},
		Body:          io.NopCloser(strings.NewReader(robotsDisallowAll)),
		ContentLength: int64(len(robotsDisallowAll)),
		Request:       req,
	}, nil
}

// FetchHTML fetches one page through c's collector (Colly) and returns it
// parsed. A robots.txt disallow, a non-2xx status, a transport failure and
// a page over the size limit are errors naming the (redacted) URL.
func FetchHTML(ctx context.Context, c *Client, rawURL string) (*goquery.Document, error) {
	where := "GET " + rawURL
	if u, err := url.Parse(rawURL); err == nil {
		where = "GET " + RedactURL(u)
	}
	col := c.Colly(ctx)
	var (
		doc      *goquery.Document
		parseErr error
		status   int
	)
	col.OnResponse(func(r *colly.Response) {
		doc, parseErr = goquery.NewDocumentFromReader(bytes.NewReader(r.Body))
	})
	col.OnError(func(r *colly.Response, _ error) {
		if r != nil {
			status = r.StatusCode
		}
	})
	err := col.Visit(rawURL)
	var tooLarge *ErrTooLarge
	switch {
	case errors.Is(err, colly.ErrRobotsTxtBlocked):
		return nil, fmt.Errorf("%s: %w", where, ErrRobotsDisallowed)
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("%s: %w", where, tooLarge)
	case err != nil && status != 0 && status/100 != 2:
		return nil, fmt.Errorf("%s: HTTP %d %s", where, status, http.StatusText(status))
	case err != nil:
		return nil, fmt.Errorf("%s: %w", where, unwrapURLError(err))
	case parseErr != nil:
		return nil, fmt.Errorf("%s: parse html: %w", where, parseErr)
	case doc == nil:
		return nil, fmt.Errorf("%s: no response", where)
	}
	return doc, nil
}
