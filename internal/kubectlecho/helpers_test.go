package kubectlecho

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// testNow is the time of the tests' env.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testEnv is an env on a fake client holding objs in namespace ns, and
// its output and error streams.
type testEnv struct {
	*env
	out, errOut *bytes.Buffer
}

func newTestEnv(t *testing.T, objs ...client.Object) *testEnv {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, echov1alpha1.AddToScheme, livev1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&echov1alpha1.EchoBackup{}, &echov1alpha1.EchoRestore{}, &echov1alpha1.Echo{}).
		WithIndex(&corev1.Event{}, "involvedObject.kind", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Kind} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		Build()
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &testEnv{
		env: &env{client: c, namespace: "ns", streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
			now: func() time.Time { return testNow }},
		out: out, errOut: errOut,
	}
}

// connect is a connect func that hands out the test's env.
func (te *testEnv) connect() (*env, error) { return te.env, nil }

// output is -o format of a command with or without -o wide.
func output(t *testing.T, format string, wide bool) *outputFlags {
	t.Helper()
	o := newOutputFlags(wide)
	*o.print.OutputFormat = format
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	return o
}
