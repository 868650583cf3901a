package datamover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// A listing of a store that someone else names (ListBackups with
// ListOptions) may face a service that answers with endless pages or
// bodies. Its bounds travel with the listing's context to every request
// the S3 client sends for it, and the store's transport enforces them:
// the store itself keeps no state, so the same store serves a Backup or
// Restore, which carry no bounds and are not limited, and a listing.

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
	if limit := requestBoundsFrom(req.Context()).maxResponseBytes; err == nil && limit > 0 {
		resp.Body = &boundedBody{body: resp.Body, left: limit, limit: limit}
	}
	return resp, err
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
