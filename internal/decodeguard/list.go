package decodeguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// guardList replaces a list response's body with the list without the items
// that do not decode. Client-go reads a list whole, so reading it here
// first costs no more memory than the list itself.
func (g *Guard) guardList(resp *http.Response) (*http.Response, error) {
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	markRewritten(resp)
	filtered := g.filterList(body)
	resp.Body = io.NopCloser(bytes.NewReader(filtered))
	resp.ContentLength = int64(len(filtered))
	return resp, nil
}

// readBody reads and closes a response's body, decoding its content encoding.
func readBody(resp *http.Response) ([]byte, error) {
	defer func() { _ = resp.Body.Close() }()
	plain, err := plainBody(resp.Body, isGzipped(resp))
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(plain)
	if err != nil {
		return nil, fmt.Errorf("reading a list response: %w", err)
	}
	return body, nil
}

// filterList returns body without the items of the group that do not
// decode, each reported. Kept items are the bytes the API server sent, and
// body itself is returned when nothing was dropped or when it is not a list
// of the group.
func (g *Guard) filterList(body []byte) []byte {
	list, err := scanList(body)
	if err != nil || list.gvk.Group != g.group {
		return body
	}
	itemType, ok := g.itemType(list.gvk)
	if !ok {
		return body
	}
	itemKind := list.gvk.GroupVersion().WithKind(strings.TrimSuffix(list.gvk.Kind, "List"))
	kept := make([][]byte, 0, len(list.items))
	for _, item := range list.items {
		if rejection := checkItem(item, itemType, itemKind); rejection != nil {
			g.report(*rejection)
			continue
		}
		kept = append(kept, item)
	}
	if len(kept) == len(list.items) {
		return body
	}
	return list.withItems(body, kept)
}

// itemType returns the Go type of the items of a list kind the scheme knows.
func (g *Guard) itemType(listKind schema.GroupVersionKind) (reflect.Type, bool) {
	list, err := g.scheme.New(listKind)
	if err != nil {
		return nil, false
	}
	items, err := meta.GetItemsPtr(list)
	if err != nil {
		return nil, false
	}
	return reflect.TypeOf(items).Elem().Elem(), true
}

// scannedList locates a list's kind and items in its JSON encoding.
type scannedList struct {
	gvk schema.GroupVersionKind
	// items are slices of the body, one per item.
	items [][]byte
	// open is the offset just after the items' '[', closing that of their ']'.
	open, closing int64
}

var errNotAList = errors.New("not a list")

// scanList reads a list's apiVersion, kind and items without decoding the
// items. The API server writes kind after items, so the items are judged
// only once the whole list is scanned.
func scanList(body []byte) (*scannedList, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotAList
	}
	list := &scannedList{}
	var apiVersion, kind string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch tok {
		case "apiVersion":
			err = dec.Decode(&apiVersion)
		case "kind":
			err = dec.Decode(&kind)
		case "items":
			err = list.scanItems(dec, body)
		default:
			var skipped json.RawMessage
			err = dec.Decode(&skipped)
		}
		if err != nil {
			return nil, err
		}
	}
	if list.open == 0 {
		return nil, errNotAList
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	list.gvk = gv.WithKind(kind)
	return list, nil
}

// scanItems records where each item of the items array lies in body.
func (l *scannedList) scanItems(dec *json.Decoder, body []byte) error {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return errNotAList
	}
	l.open = dec.InputOffset()
	for dec.More() {
		start := dec.InputOffset()
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return err
		}
		// What lies before the item is the separator and white space.
		l.items = append(l.items, bytes.TrimLeft(body[start:dec.InputOffset()], ", \t\r\n"))
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	l.closing = dec.InputOffset() - 1
	return nil
}

// withItems returns body with its items replaced by items.
func (l *scannedList) withItems(body []byte, items [][]byte) []byte {
	out := make([]byte, 0, len(body))
	out = append(out, body[:l.open]...)
	for i, item := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, item...)
	}
	return append(out, body[l.closing:]...)
}
