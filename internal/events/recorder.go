package events

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	k8sevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// noteLimit is the longest note, in bytes, of an events.k8s.io/v1 Event:
// the API server refuses longer ones.
const noteLimit = 1024

// Recorder is a record.EventRecorder that records events.k8s.io/v1 Events.
// The record.EventRecorder message becomes the Event's note, cut to what
// the API server accepts; the action comes from the reason.
type Recorder struct {
	recorder k8sevents.EventRecorder
	actionOf func(reason string) string
}

var _ record.EventRecorder = (*Recorder)(nil)

// Event records an Event regarding object.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.recorder.Eventf(object, nil, eventtype, reason, r.actionOf(reason), "%s", truncate(message, noteLimit))
}

// Eventf records an Event regarding object, its message formatted with
// fmt.Sprintf.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.Event(object, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf records like Eventf: an events.k8s.io/v1 Event has no
// annotations, so they are left out.
func (r *Recorder) AnnotatedEventf(object runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.Eventf(object, eventtype, reason, messageFmt, args...)
}

// truncate cuts s to at most n bytes, on a character boundary, marking the
// cut.
func truncate(s string, n int) string {
	const marker = " ..."
	if len(s) <= n {
		return s
	}
	cut := n - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}
