package moverrunner

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A pod deleted before its result is written (its Job deleted by the
// operator meanwhile) is reported as ErrPodGone, which callers tell apart
// from a run that failed.
func TestReportOnADeletedPodIsErrPodGone(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &watcher{runner: &Runner{Client: fake.NewClientBuilder().WithScheme(scheme).Build()}, ctx: context.Background()}
	err := w.report(Run{Pod: types.NamespacedName{Namespace: "ns", Name: "gone"}})
	if !errors.Is(err, ErrPodGone) {
		t.Fatalf("report = %v, want ErrPodGone", err)
	}
}
