package decodeguard

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
)

// guardWatch replaces a watch response's body with a stream that carries
// the server's events one by one, as they come, those of objects that do
// not decode turned into deletions.
func (g *Guard) guardWatch(resp *http.Response) *http.Response {
	server := resp.Body
	gzipped := isGzipped(resp)
	pr, pw := io.Pipe()
	go func() {
		// Ends when the server ends the stream or the client closes
		// the body, which closes the server's stream too.
		_ = pw.CloseWithError(g.filterWatch(server, gzipped, pw))
	}()
	markRewritten(resp)
	resp.Body = &watchBody{PipeReader: pr, server: server}
	return resp
}

// watchBody is the body of a guarded watch: closing it stops the stream
// from the server.
type watchBody struct {
	*io.PipeReader
	server io.Closer
}

// Close implements io.Closer.
func (b *watchBody) Close() error {
	_ = b.PipeReader.Close()
	return b.server.Close()
}

// filterWatch copies the events of a watch stream from body to out, one at
// a time. A read error is passed on as it is, since client-go tells a
// closed stream from a broken one by its error.
func (g *Guard) filterWatch(body io.Reader, gzipped bool, out io.Writer) error {
	plain, err := plainBody(body, gzipped)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(plain)
	for {
		var event json.RawMessage
		if err := dec.Decode(&event); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if _, err := out.Write(append(g.guardEvent(event), '\n')); err != nil {
			return err
		}
	}
}

// watchEvent is a watch event as the API server encodes it.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// guardEvent returns a watch event as it came, or, when its object does not
// decode, a deletion of the object. Bookmarks and errors carry no object of
// the group and pass.
func (g *Guard) guardEvent(raw []byte) []byte {
	var event watchEvent
	if err := utiljson.Unmarshal(raw, &event); err != nil {
		return raw
	}
	switch event.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return raw
	}
	rejection := g.checkObject(event.Object)
	if rejection == nil {
		return raw
	}
	if event.Type != watch.Deleted {
		// An object on its way out needs no fixing.
		g.report(*rejection)
	}
	object, err := tombstone(rejection.GroupVersionKind, event.Object)
	if err != nil {
		return raw
	}
	deletion, err := json.Marshal(watchEvent{Type: watch.Deleted, Object: object})
	if err != nil {
		return raw
	}
	return deletion
}
