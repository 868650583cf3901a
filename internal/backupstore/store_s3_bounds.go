package backupstore

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// A listing of a store that someone else names (ListBackups with
// ListOptions) may face a service that answers with endless pages or
// bodies. Its bounds travel with the listing's context to every request
// the S3 client sends for it, and the store's transport enforces them:
// the store itself keeps no state, so the same store serves a Backup or
// Restore, which carry no bounds and are not limited, and a listing.
//
// Under bounds, the transport also reads each page of a listing itself
// before minio-go does: minio-go decodes a page whole, each object into a
// struct of almost 500 bytes with lists and maps of what S3 may say of
// it, so that a page of a few MiB of tiny or repeated elements would take
// a hundred MiB. The transport keeps of a page only what a listing uses,
// of at most maxPageKeys objects, and hands minio-go that.

// requestBounds bound the requests sent under a context.
type requestBounds struct {
	// maxResponseBytes fails the body of a response past that many
	// bytes; 0 does not.
	maxResponseBytes int64
	// maxListPages cuts a Walk of an S3 store after that many list
	// requests; 0 does not.
	maxListPages int
}

type requestBoundsKey struct{}

func withRequestBounds(ctx context.Context, b requestBounds) context.Context {
	return context.WithValue(ctx, requestBoundsKey{}, b)
}

func requestBoundsFrom(ctx context.Context) requestBounds {
	b, _ := ctx.Value(requestBoundsKey{}).(requestBounds)
	return b
}

// errListingCut is the cause of a Walk stopped by its page budget.
var errListingCut = errors.New("the listing was cut")

// pageBudget counts the list requests of one Walk, and ends the Walk's
// context once they exceed max.
type pageBudget struct {
	max    int
	cancel context.CancelCauseFunc

	mu   sync.Mutex
	sent int
}

type pageBudgetKey struct{}

// take counts one request: an error once the budget is spent.
func (p *pageBudget) take() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sent >= p.max {
		err := fmt.Errorf("%w after %d pages", errListingCut, p.max)
		p.cancel(err)
		return err
	}
	p.sent++
	return nil
}

// ResponseTooLargeError is the error of reading a response body past the
// bound of its request.
type ResponseTooLargeError struct{ Limit int64 }

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the storage answered with more than %d bytes, the most the operator reads of one answer here", e.Limit)
}

// PageTooLargeError is the error of a page of a listing of more objects
// than S3 sends.
type PageTooLargeError struct{ Limit int }

func (e *PageTooLargeError) Error() string {
	return fmt.Sprintf("the storage sent a page of more than %d objects, the most S3 sends", e.Limit)
}

// boundedTransport enforces the bounds of each request's context.
type boundedTransport struct {
	base http.RoundTripper
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if p, ok := req.Context().Value(pageBudgetKey{}).(*pageBudget); ok {
		if err := p.take(); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	limit := requestBoundsFrom(req.Context()).maxResponseBytes
	if err != nil || limit <= 0 {
		return resp, err
	}
	resp.Body = &boundedBody{body: resp.Body, left: limit, limit: limit}
	if resp.StatusCode == http.StatusOK && req.Method == http.MethodGet && req.URL.Query().Get("list-type") == "2" {
		page, err := readListPage(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(page)), int64(len(page))
		resp.Header.Set("Content-Length", strconv.Itoa(len(page)))
	}
	return resp, nil
}

// maxPageKeys is the most keys a page of a listing may hold: S3 sends
// 1,000 at most.
const maxPageKeys = 1000

// listPage is what a listing reads of a ListObjectsV2 answer.
type listPage struct {
	XMLName               xml.Name    `xml:"ListBucketResult"`
	Name                  string      `xml:"Name,omitempty"`
	Prefix                string      `xml:"Prefix"`
	KeyCount              string      `xml:"KeyCount,omitempty"`
	MaxKeys               string      `xml:"MaxKeys,omitempty"`
	EncodingType          string      `xml:"EncodingType,omitempty"`
	IsTruncated           string      `xml:"IsTruncated,omitempty"`
	ContinuationToken     string      `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string      `xml:"NextContinuationToken,omitempty"`
	Contents              []listEntry `xml:"Contents"`
}

// listEntry is what a listing reads of an object of a page.
type listEntry struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified,omitempty"`
	ETag         string `xml:"ETag,omitempty"`
	Size         string `xml:"Size,omitempty"`
}

// readListPage reads a ListObjectsV2 answer, element by element, keeping
// what a listing reads of it and skipping the rest, and encodes that
// again. A page of more than maxPageKeys objects is an error.
func readListPage(body io.Reader) ([]byte, error) {
	dec := xml.NewDecoder(body)
	var page listPage
	fields := map[string]*string{
		"Name": &page.Name, "Prefix": &page.Prefix, "KeyCount": &page.KeyCount, "MaxKeys": &page.MaxKeys,
		"EncodingType": &page.EncodingType, "IsTruncated": &page.IsTruncated,
		"ContinuationToken": &page.ContinuationToken, "NextContinuationToken": &page.NextContinuationToken,
	}
	root := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && root {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading a page of the listing: %w", err)
		}
		start, ok := tok.(xml.StartElement)
		switch {
		case !ok:
		case !root:
			root = true
		case start.Name.Local == "Contents" && len(page.Contents) == maxPageKeys:
			return nil, &PageTooLargeError{Limit: maxPageKeys}
		case start.Name.Local == "Contents":
			var e listEntry
			if err := dec.DecodeElement(&e, &start); err != nil {
				return nil, fmt.Errorf("reading a page of the listing: %w", err)
			}
			page.Contents = append(page.Contents, e)
		case fields[start.Name.Local] != nil:
			if err := dec.DecodeElement(fields[start.Name.Local], &start); err != nil {
				return nil, fmt.Errorf("reading a page of the listing: %w", err)
			}
		default:
			if err := dec.Skip(); err != nil {
				return nil, fmt.Errorf("reading a page of the listing: %w", err)
			}
		}
	}
	return xml.Marshal(page)
}

// boundedBody fails once more than limit bytes are read.
type boundedBody struct {
	body        io.ReadCloser
	left, limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a
		// longer one.
		var probe [1]byte
		if n, err := b.body.Read(probe[:]); n == 0 {
			return 0, err
		}
		return 0, &ResponseTooLargeError{Limit: b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }
