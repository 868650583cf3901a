package decodeguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/tools/record"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestReporterLogsAndRecordsAWarning(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	r := NewReporter(log)
	rejection := Rejection{
		GroupVersionKind: echov1alpha1.GroupVersion.WithKind("EchoBackupSchedule"),
		Namespace:        "team-a", Name: "nightly", UID: "uid-1", ResourceVersion: "7",
		Field: "spec.retention.maxAge",
		Err:   errors.New(`time: unknown unit "d" in duration "7d"`),
	}

	r.Report(rejection) // before the manager hands a recorder over: logs only
	recorder := record.NewFakeRecorder(4)
	r.SetRecorder(recorder)
	r.Report(rejection)

	if len(logged) != 2 {
		t.Fatalf("logged %d lines, want 2", len(logged))
	}
	for _, want := range []string{`"kind"="EchoBackupSchedule"`, `"namespace"="team-a"`, `"name"="nightly"`,
		`"field"="spec.retention.maxAge"`, `unknown unit \"d\"`} {
		if !strings.Contains(logged[0], want) {
			t.Errorf("log %s lacks %s", logged[0], want)
		}
	}
	if len(recorder.Events) != 1 {
		t.Fatalf("recorded %d Events, want 1", len(recorder.Events))
	}
	ev := <-recorder.Events
	for _, want := range []string{"Warning " + echov1alpha1.EventReasonUndecodableObject, "spec.retention.maxAge", `"7d"`,
		"kubectl edit echobackupschedule nightly -n team-a"} {
		if !strings.Contains(ev, want) {
			t.Errorf("Event %q lacks %q", ev, want)
		}
	}
}

func TestMessageStaysShort(t *testing.T) {
	rejection := Rejection{
		GroupVersionKind: echov1alpha1.GroupVersion.WithKind("Echo"),
		Namespace:        "team-a", Name: "web",
		Err: errors.New(strings.Repeat("é", 2000)),
	}
	msg := rejection.Message()
	if len(msg) > maxMessageLength {
		t.Errorf("message of %d bytes, want at most %d", len(msg), maxMessageLength)
	}
	if !strings.HasSuffix(msg, "kubectl edit echo web -n team-a, or kubectl patch") {
		t.Errorf("the fix was cut from %q", msg)
	}
	if !strings.Contains(msg, "the object does not decode") {
		t.Errorf("a rejection without a field should blame the object: %q", msg)
	}
}
