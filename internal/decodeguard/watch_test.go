package decodeguard

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func event(typ, object string) string { return `{"type":"` + typ + `","object":` + object + `}` }

// deletionOf is the deletion the guard sends for an object of schedule()
// with the given metadata.
func deletionOf(metadata string) string {
	return event("DELETED", `{"apiVersion":"echo.dev/v1alpha1","kind":"EchoBackupSchedule","metadata":`+metadata+`}`)
}

// badMetadata is the metadata of schedule("bad", ...).
const badMetadata = `{"name":"bad","namespace":"team-a","uid":"uid-bad","resourceVersion":"7","labels":{"team":"a"}}`

func TestWatchTurnsUndecodableObjectsIntoDeletions(t *testing.T) {
	good, bad := schedule("good", "168h"), schedule("bad", "7d")
	badMeta := strings.Replace(schedule("bad-meta", "7d"), `"labels":{"team":"a"}`, `"labels":{"team":7}`, 1)
	bookmark := `{"apiVersion":"echo.dev/v1alpha1","kind":"EchoBackupSchedule","metadata":{"resourceVersion":"50","annotations":{"k8s.io/initial-events-end":"true"}}}`
	status := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`

	cases := []struct {
		name      string
		in        string
		want      string
		wantNames []string
	}{
		{"an object that decodes", event("ADDED", good), event("ADDED", good), nil},
		{"an added object that does not", event("ADDED", bad), deletionOf(badMetadata), []string{"bad"}},
		{"a modified object that does not", event("MODIFIED", bad), deletionOf(badMetadata), []string{"bad"}},
		{"a deleted object that does not", event("DELETED", bad), deletionOf(badMetadata), nil},
		{"metadata that does not decode", event("MODIFIED", badMeta),
			deletionOf(`{"name":"bad-meta","namespace":"team-a","uid":"uid-bad-meta","resourceVersion":"7"}`),
			[]string{"bad-meta"}},
		{"a bookmark", event("BOOKMARK", bookmark), event("BOOKMARK", bookmark), nil},
		{"an error", event("ERROR", status), event("ERROR", status), nil},
		{"an object of another group", event("ADDED", strings.Replace(bad, "echo.dev/v1alpha1", "other.dev/v1", 1)),
			event("ADDED", strings.Replace(bad, "echo.dev/v1alpha1", "other.dev/v1", 1)), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, reported := newTestGuard()
			_, got := get(t, g, schedules+"?watch=true", tc.in+"\n", nil)
			want := tc.want + "\n"
			if tc.want != tc.in {
				want = compact(t, tc.want) + "\n"
			}
			if string(got) != want {
				t.Errorf("event:\n got %s\nwant %s", got, want)
			}
			var names []string
			for _, r := range reported.all() {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Errorf("reported %q, want %q", names, tc.wantNames)
			}
		})
	}
}

func TestWatchStreamsEventByEvent(t *testing.T) {
	good, bad := schedule("good", "168h"), schedule("bad", "7d")
	server, feed := io.Pipe()
	g, _ := newTestGuard()
	req, err := http.NewRequest(http.MethodGet, "https://api.example.test"+schedules+"?watch=1&allowWatchBookmarks=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := g.Wrap(serverResponse(http.StatusOK, server, nil)).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(resp.Body)

	// The server sends its events in chunks; the guard must pass each on
	// before the next one comes, or the cache would lag behind.
	steps := []struct{ send, want string }{
		{event("ADDED", good), event("ADDED", good)},
		{event("MODIFIED", bad), compact(t, deletionOf(badMetadata))},
		{event("MODIFIED", good), event("MODIFIED", good)},
	}
	for _, step := range steps {
		go func() { _, _ = feed.Write([]byte(step.send + "\n")) }()
		if line := readLine(t, lines); line != step.want+"\n" {
			t.Errorf("got %s, want %s", line, step.want)
		}
	}

	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Write([]byte(event("ADDED", good))); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("closing the guarded body left the server's stream open (write: %v)", err)
	}
}

// readLine reads one line, failing the test when none comes in time.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("no event came through")
		return ""
	}
}

func TestWatchReadsGzipAndLegacyPaths(t *testing.T) {
	good, bad := schedule("good", "168h"), schedule("bad", "7d")
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write([]byte(event("ADDED", bad) + "\n" + event("ADDED", good) + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	g, reported := newTestGuard()
	resp, got := get(t, g, "/apis/echo.dev/v1alpha1/watch/namespaces/team-a/echobackupschedules", zipped.String(),
		http.Header{"Content-Encoding": {"gzip"}})
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("Content-Encoding = %q on a body the guard decompressed", resp.Header.Get("Content-Encoding"))
	}
	events := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(events) != 2 || !strings.HasPrefix(events[0], `{"type":"DELETED"`) || events[1] != event("ADDED", good) {
		t.Errorf("events = %q, want a deletion of bad and good as it came", events)
	}
	if n := len(reported.all()); n != 1 {
		t.Errorf("reported %d objects, want 1", n)
	}
}

func TestWatchPassesABrokenStreamOn(t *testing.T) {
	g, _ := newTestGuard()
	req, err := http.NewRequest(http.MethodGet, "https://api.example.test"+schedules+"?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	truncated := io.NopCloser(strings.NewReader(event("ADDED", schedule("good", "1h")) + "\n" + `{"type":"ADDED","obj`))
	resp, err := g.Wrap(serverResponse(http.StatusOK, truncated, nil)).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading a truncated stream: %v, want %v", err, io.ErrUnexpectedEOF)
	}
}
