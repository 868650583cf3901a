package decodeguard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The tests below use the typed client the cache lists and watches with,
// against a server that stores one undecodable schedule beside two good ones.

func TestTypedClientListsAroundUndecodableObjects(t *testing.T) {
	server := newScheduleServer(t)
	if err := listSchedules(typedClient(t, server.URL, server.Client()), &echov1alpha1.EchoBackupScheduleList{}); err == nil {
		t.Fatal("the list decodes without the guard: the test shows nothing")
	}

	g, reported := newTestGuard()
	list := &echov1alpha1.EchoBackupScheduleList{}
	if err := listSchedules(typedClient(t, server.URL, g.Client(server.Client())), list); err != nil {
		t.Fatalf("listing through the guard: %v", err)
	}
	if len(list.Items) != 2 || list.Items[0].Name != "good" || list.Items[1].Name != "good2" || list.ResourceVersion != "42" {
		t.Fatalf("list = %+v, want good and good2 at resourceVersion 42", list)
	}
	if list.Items[0].Spec.Retention.MaxAge.Duration != 168*time.Hour {
		t.Errorf("good's maxAge = %v, want 168h", list.Items[0].Spec.Retention.MaxAge)
	}
	if n := len(reported.all()); n != 1 {
		t.Errorf("reported %d rejections, want 1", n)
	}
}

func TestTypedClientWatchesAroundUndecodableObjects(t *testing.T) {
	server := newScheduleServer(t)
	g, reported := newTestGuard()
	w, err := typedClient(t, server.URL, g.Client(server.Client())).Get().Namespace("team-a").Resource("echobackupschedules").
		VersionedParams(&metav1.ListOptions{Watch: true}, metav1.ParameterCodec).Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	want := []struct {
		typ  watch.EventType
		name string
	}{{watch.Added, "good"}, {watch.Deleted, "bad"}, {watch.Modified, "good2"}}
	for _, e := range want {
		got, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("the watch ended before %s %s", e.typ, e.name)
		}
		s, isSchedule := got.Object.(*echov1alpha1.EchoBackupSchedule)
		if got.Type != e.typ || !isSchedule || s.Name != e.name {
			t.Fatalf("event %s %#v, want %s of schedule %s", got.Type, got.Object, e.typ, e.name)
		}
		if e.name == "bad" && (s.UID != "uid-bad" || s.ResourceVersion != "7" || s.Labels["team"] != "a") {
			t.Errorf("the deletion of bad lost its metadata: %+v", s.ObjectMeta)
		}
	}
	if n := len(reported.all()); n != 1 {
		t.Errorf("reported %d rejections, want 1", n)
	}
}

// newScheduleServer serves a list of schedules, and a watch of them, one
// of which does not decode.
func newScheduleServer(t *testing.T) *httptest.Server {
	t.Helper()
	good, good2, bad := schedule("good", "168h"), schedule("good2", "1h"), schedule("bad", "7d")
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			_, _ = io.WriteString(w, scheduleList(good, bad, good2))
			return
		}
		for _, ev := range []string{event("ADDED", good), event("ADDED", bad), event("MODIFIED", good2)} {
			_, _ = io.WriteString(w, ev+"\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(server.Close)
	return server
}

func typedClient(t *testing.T, host string, httpClient *http.Client) rest.Interface {
	t.Helper()
	gvk := echov1alpha1.GroupVersion.WithKind("EchoBackupSchedule")
	c, err := apiutil.RESTClientForGVK(gvk, false, false, &rest.Config{Host: host}, serializer.NewCodecFactory(testScheme()), httpClient)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func listSchedules(c rest.Interface, into *echov1alpha1.EchoBackupScheduleList) error {
	return c.Get().Namespace("team-a").Resource("echobackupschedules").Do(context.Background()).Into(into)
}
