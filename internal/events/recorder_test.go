package events

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// recorded is one call of fakeRecorder.
type recorded struct {
	regarding, related        runtime.Object
	eventtype, reason, action string
	note                      string
}

// fakeRecorder keeps the Events recorded with it, their notes formatted.
type fakeRecorder struct{ events []recorded }

func (f *fakeRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	f.events = append(f.events, recorded{regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...)})
}

func actionOfReason(reason string) string { return "Acting-" + reason }

func TestRecorderMapsEveryMethod(t *testing.T) {
	fake := &fakeRecorder{}
	r := &Recorder{recorder: fake, actionOf: actionOfReason}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}

	r.Event(obj, corev1.EventTypeNormal, "Done", "100% done, %s left as is")
	r.Eventf(obj, corev1.EventTypeWarning, "Failed", "attempt %d failed: %v", 3, "timeout")
	r.AnnotatedEventf(obj, map[string]string{"a": "b"}, corev1.EventTypeNormal, "Noted", "with %s", "annotations")

	want := []recorded{
		{obj, nil, corev1.EventTypeNormal, "Done", "Acting-Done", "100% done, %s left as is"},
		{obj, nil, corev1.EventTypeWarning, "Failed", "Acting-Failed", "attempt 3 failed: timeout"},
		{obj, nil, corev1.EventTypeNormal, "Noted", "Acting-Noted", "with annotations"},
	}
	if len(fake.events) != len(want) {
		t.Fatalf("recorded %d Events, want %d", len(fake.events), len(want))
	}
	for i, w := range want {
		if got := fake.events[i]; got != w {
			t.Errorf("Event %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestRecorderCutsLongNotes(t *testing.T) {
	fake := &fakeRecorder{}
	r := &Recorder{recorder: fake, actionOf: actionOfReason}
	long := "Upgrading the release failed: " + strings.Repeat("é", 2000)
	r.Event(&corev1.ConfigMap{}, corev1.EventTypeWarning, "UpgradeFailed", long)

	note := fake.events[0].note
	if len(note) > noteLimit {
		t.Errorf("note of %d bytes, want at most %d", len(note), noteLimit)
	}
	if !utf8.ValidString(note) {
		t.Errorf("note cut inside a character: %q", note[len(note)-8:])
	}
	if !strings.HasPrefix(note, "Upgrading the release failed: éé") || !strings.HasSuffix(note, "é ...") {
		t.Errorf("note %q does not keep the start and mark the cut", note)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789ab", 10, "012345 ..."},
		{"ééééé", 8, "éé ..."},
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
