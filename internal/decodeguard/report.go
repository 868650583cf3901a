package decodeguard

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// maxMessageLength keeps Event messages within what the API server stores
// for them.
const maxMessageLength = 1024

// Reporter tells about rejected objects: an error in the log and a Warning
// Event on the object, for its owner to fix it.
type Reporter struct {
	log      logr.Logger
	recorder atomic.Pointer[record.EventRecorder]
}

// NewReporter returns a reporter that logs to log and, once SetRecorder is
// called, records Events.
func NewReporter(log logr.Logger) *Reporter {
	return &Reporter{log: log}
}

// SetRecorder makes the reporter record Events with rec; until then it
// only logs.
func (r *Reporter) SetRecorder(rec record.EventRecorder) {
	r.recorder.Store(&rec)
}

// Report logs a rejection and records it on the object.
func (r *Reporter) Report(rejection Rejection) {
	r.log.Error(rejection.Err, "Ignored an object that does not decode into its Go type",
		"kind", rejection.GroupVersionKind.Kind, "apiVersion", rejection.GroupVersionKind.GroupVersion().String(),
		"namespace", rejection.Namespace, "name", rejection.Name,
		"field", rejection.Field, "resourceVersion", rejection.ResourceVersion)
	rec := r.recorder.Load()
	if rec == nil || rejection.Name == "" {
		return
	}
	(*rec).Event(rejection.ObjectReference(), corev1.EventTypeWarning, echov1alpha1.EventReasonUndecodableObject, rejection.Message())
}

// Message says what fails and how to fix it, for the object's owner.
func (r Rejection) Message() string {
	kind := r.GroupVersionKind.Kind
	what := "the object"
	if r.Field != "" {
		what = r.Field
	}
	namespace := ""
	if r.Namespace != "" {
		namespace = " -n " + r.Namespace
	}
	fix := fmt.Sprintf("Correct the value with kubectl edit %s %s%s, or kubectl patch", strings.ToLower(kind), r.Name, namespace)
	cause := fmt.Sprintf("The operator cannot read this %s and ignores it until it is fixed: %s does not decode: %v", kind, what, r.Err)
	return truncate(cause, maxMessageLength-len(fix)-2) + ". " + fix
}

// truncate cuts s to at most n bytes, on a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := 0
	for i := range s {
		if i > n-len("...") {
			break
		}
		cut = i
	}
	return s[:cut] + "..."
}
