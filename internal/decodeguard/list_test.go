package decodeguard

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestListDropsItemsThatDoNotDecode(t *testing.T) {
	good, good2, bad := schedule("good", "168h"), schedule("good2", "1h30m"), schedule("bad", "7d")
	badLabel := strings.Replace(schedule("bad-label", "1h"), `"labels":{"team":"a"}`, `"labels":{"team":7}`, 1)
	noKind := strings.Replace(strings.Replace(bad, `"apiVersion":"echo.dev/v1alpha1","kind":"EchoBackupSchedule",`, "", 1), `"name":"bad"`, `"name":"no-kind"`, 1)
	otherKind := strings.Replace(strings.Replace(bad, `"kind":"EchoBackupSchedule"`, `"kind":"EchoWidget"`, 1), `"name":"bad"`, `"name":"other-kind"`, 1)
	pretty := "{\n  \"apiVersion\": \"echo.dev/v1alpha1\",\n  \"items\": [\n    " + good + ",\n    " + bad + " ,\n    " + good2 +
		"\n  ],\n  \"kind\": \"EchoBackupScheduleList\",\n  \"metadata\": {\"resourceVersion\": \"42\"}\n}\n"

	cases := []struct {
		name      string
		body      string
		wantItems []string // the items kept, byte for byte
		wantNames []string // the objects reported
		wantField string   // the field of the first report
	}{
		{"every item decodes", scheduleList(good, good2), []string{good, good2}, nil, ""},
		{"empty list", scheduleList(), nil, nil, ""},
		{"an unparsable duration", scheduleList(good, bad, good2), []string{good, good2}, []string{"bad"}, "spec.retention.maxAge"},
		{"only bad items", scheduleList(bad), nil, []string{"bad"}, "spec.retention.maxAge"},
		{"a label that is no string", scheduleList(badLabel, good), []string{good}, []string{"bad-label"}, "metadata.labels.team"},
		{"an item that does not say its kind", scheduleList(noKind, good), []string{good}, []string{"no-kind"}, "spec.retention.maxAge"},
		{"an item that says another kind", scheduleList(otherKind, good), []string{good}, []string{"other-kind"}, "spec.retention.maxAge"},
		{"pretty-printed", pretty, []string{good, good2}, []string{"bad"}, "spec.retention.maxAge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, reported := newTestGuard()
			_, got := get(t, g, schedules, tc.body, nil)

			if len(tc.wantNames) == 0 && string(got) != tc.body {
				t.Errorf("a list with nothing to drop changed:\n got %s\nwant %s", got, tc.body)
			}
			items, rv := listItems(t, got)
			if !slices.Equal(items, tc.wantItems) {
				t.Errorf("items:\n got %q\nwant %q", items, tc.wantItems)
			}
			if rv != "42" {
				t.Errorf("the list's resourceVersion = %q, want 42", rv)
			}
			var names []string
			for _, r := range reported.all() {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Fatalf("reported %q, want %q", names, tc.wantNames)
			}
			if len(names) > 0 {
				r := reported.all()[0]
				if r.Field != tc.wantField || r.Namespace != "team-a" || r.GroupVersionKind.Kind != "EchoBackupSchedule" || r.Err == nil {
					t.Errorf("report = %+v, want kind EchoBackupSchedule, namespace team-a, field %s and an error", r, tc.wantField)
				}
			}
			decodeAsClientGoDoes(t, got)
		})
	}
}

// listItems returns a list's items as they are encoded, and its resourceVersion.
func listItems(t *testing.T, body []byte) ([]string, string) {
	t.Helper()
	var list struct {
		Items    []json.RawMessage `json:"items"`
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("the guarded list is no JSON: %v\n%s", err, body)
	}
	var items []string
	for _, item := range list.Items {
		items = append(items, string(item))
	}
	return items, list.Metadata.ResourceVersion
}

// decodeAsClientGoDoes decodes a list into its Go type with the codecs a
// typed client uses.
func decodeAsClientGoDoes(t *testing.T, body []byte) {
	t.Helper()
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(testScheme())}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if _, _, err := info.Serializer.Decode(body, nil, &echov1alpha1.EchoBackupScheduleList{}); err != nil {
		t.Errorf("the guarded list does not decode: %v", err)
	}
}

func TestListPassesOtherResponsesUntouched(t *testing.T) {
	bad := scheduleList(schedule("bad", "7d"))
	cases := []struct {
		name   string
		method string
		path   string
		status int
		header http.Header
		body   string
	}{
		{"another group", http.MethodGet, "/apis/apps/v1/namespaces/team-a/deployments", http.StatusOK, nil, bad},
		{"the core group", http.MethodGet, "/api/v1/namespaces/team-a/configmaps", http.StatusOK, nil, bad},
		{"a write", http.MethodPost, schedules, http.StatusOK, nil, bad},
		{"one object", http.MethodGet, schedules + "/bad", http.StatusOK, nil, schedule("bad", "7d")},
		{"a subresource", http.MethodGet, schedules + "/bad/status", http.StatusOK, nil, schedule("bad", "7d")},
		{"discovery", http.MethodGet, "/apis/echo.dev/v1alpha1", http.StatusOK, nil, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"echo.dev/v1alpha1","resources":[]}`},
		{"an error", http.MethodGet, schedules, http.StatusInternalServerError, nil, bad},
		{"protobuf", http.MethodGet, schedules, http.StatusOK, http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}}, bad},
		{"a table", http.MethodGet, schedules, http.StatusOK, http.Header{"Content-Type": {"application/json;as=Table;v=v1;g=meta.k8s.io"}}, bad},
		{"metadata only", http.MethodGet, schedules, http.StatusOK, http.Header{"Content-Type": {"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"}}, bad},
		{"an unknown encoding", http.MethodGet, schedules, http.StatusOK, http.Header{"Content-Encoding": {"br"}}, bad},
		{"not JSON", http.MethodGet, schedules, http.StatusOK, nil, "not json"},
		{"a list kind the scheme does not know", http.MethodGet, schedules, http.StatusOK, nil, strings.Replace(bad, "EchoBackupScheduleList", "EchoWidgetList", 1)},
		{"a list of another group", http.MethodGet, schedules, http.StatusOK, nil, strings.Replace(bad, `"apiVersion":"echo.dev/v1alpha1","items"`, `"apiVersion":"other.dev/v1","items"`, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, reported := newTestGuard()
			body := io.NopCloser(strings.NewReader(tc.body))
			resp, got := send(t, g, tc.method, tc.path, serverResponse(tc.status, body, tc.header))
			if string(got) != tc.body {
				t.Errorf("body changed:\n got %s\nwant %s", got, tc.body)
			}
			if resp.Header.Get("Content-Encoding") != tc.header.Get("Content-Encoding") {
				t.Errorf("Content-Encoding = %q, want %q", resp.Header.Get("Content-Encoding"), tc.header.Get("Content-Encoding"))
			}
			if n := len(reported.all()); n != 0 {
				t.Errorf("reported %d objects, want none", n)
			}
		})
	}
}

func TestListReadsGzip(t *testing.T) {
	good := schedule("good", "168h")
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write([]byte(scheduleList(schedule("bad", "7d"), good))); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	g, reported := newTestGuard()
	resp, got := get(t, g, schedules, zipped.String(), http.Header{"Content-Encoding": {"gzip"}})
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("Content-Encoding = %q on a body the guard decompressed", resp.Header.Get("Content-Encoding"))
	}
	if resp.ContentLength != int64(len(got)) {
		t.Errorf("ContentLength = %d, the body has %d bytes", resp.ContentLength, len(got))
	}
	if items, _ := listItems(t, got); !slices.Equal(items, []string{good}) {
		t.Errorf("items = %q, want only the good one", items)
	}
	if n := len(reported.all()); n != 1 {
		t.Errorf("reported %d objects, want 1", n)
	}
}
