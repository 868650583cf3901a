package kubectlecho

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text", "Job b1-backup is backing up Echo web", "Job b1-backup is backing up Echo web"},
		{"text beyond ASCII", "sauvegardé à 10:00 — ✓", "sauvegardé à 10:00 — ✓"},
		{"a line break or tab is a space", "first\nsecond\tthird\r\n", "first second third  "},
		{"CSI: clear the screen", "ok\x1b[2J\x1b[H", `ok\x1b[2J\x1b[H`},
		{"OSC: set the window title, BEL-terminated", "\x1b]0;pwned\x07done", `\x1b]0;pwned\x07done`},
		{"backspaces over what was printed", "Failed\b\b\b\b\b\bOK    ", `Failed\x08\x08\x08\x08\x08\x08OK    `},
		{"DEL and a NUL", "a\x7fb\x00c", `a\x7fb\x00c`},
		{"a C1 control (CSI in one character)", "a\u009b2Jb", `a\x9b2Jb`},
		{"a right-to-left override", "backup\u202egpj.exe", `backup\u202egpj.exe`},
		{"an isolate", "a\u2066b\u2069c", `a\u2066b\u2069c`},
		{"a byte that is not UTF-8", "a\xffb", `a\xffb`},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := terminalSafe(tc.in); got != tc.want {
				t.Errorf("terminalSafe(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestStatusPrintsNoControlCharacters: what the namespace's users wrote
// (a condition message, an Event's message and reason) reaches the
// terminal as text.
func TestStatusPrintsNoControlCharacters(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := echov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	echo.Status.Conditions = []metav1.Condition{{Type: echov1alpha1.EchoConditionReady, Status: metav1.ConditionFalse,
		Reason: "NotReady", Message: "waiting\x1b[2K\rAll good"}}
	echo.Status.Address = "web.ns.svc\x1b]8;;http://evil.example.test\x07"
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Echo", Name: "web", Namespace: "ns"},
		Type:           corev1.EventTypeWarning, Reason: "Odd\x1b[31m", Message: "storage said: \x1b]0;title\x07\nsecond line",
		LastTimestamp: metav1.NewTime(now.Add(-time.Minute)),
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(echo, event).
		WithIndex(&corev1.Event{}, "involvedObject.kind", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Kind} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		Build()
	out := &bytes.Buffer{}
	e := &env{client: c, namespace: "ns", streams: genericiooptions.IOStreams{Out: out, ErrOut: out}, now: func() time.Time { return now }}
	if err := e.status(context.Background(), "web", newOutputFlags(true)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, r := range got {
		if r != '\n' && unsafeRune(r) {
			t.Fatalf("status printed the control character %U:\n%q", r, got)
		}
	}
	for _, want := range []string{`waiting\x1b[2K All good`, `storage said: \x1b]0;title\x07 second line`, `Odd\x1b[31m`, `\x1b]8;;http://evil.example.test\x07`} {
		if !strings.Contains(got, want) {
			t.Errorf("status does not show %q escaped:\n%s", want, got)
		}
	}
}
