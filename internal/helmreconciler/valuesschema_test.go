package helmreconciler

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	echochart "github.com/echo-operator/echo-operator/internal/chart"
)

func loadEchoChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := echochart.Load(echoChartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// helmSchemaError is the error Helm's install and upgrade give for values.
func helmSchemaError(ch *chart.Chart, vals map[string]any) error {
	_, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, chartutil.ReleaseOptions{}, nil, false)
	return err
}

// The compiled schema refuses what Helm's check refuses, with Helm's words,
// and takes what it takes.
func TestValuesSchemaChecksAsHelmDoes(t *testing.T) {
	ch := loadEchoChart(t)
	good := translate(t, echov1alpha1.EchoSpec{Message: "hello"})
	cases := map[string]map[string]any{
		"translated values": good,
		"negative replicas": {"replicas": -1},
		"unknown key":       {"replica": 3},
		"bad quantity":      {"resources": map[string]any{"limits": map[string]any{"memory": "lots"}}},
		"several at once":   {"replicas": "3", "port": 0, "service": map[string]any{"type": "Foo"}},
		"removed required":  {"message": nil},
	}
	var schemas chartSchemas
	for name, vals := range cases {
		t.Run(name, func(t *testing.T) {
			want := helmSchemaError(ch, vals)
			handled, got := schemas.validate(ch, vals)
			if !handled {
				t.Fatal("the echo chart's schema was left to Helm")
			}
			if (got == nil) != (want == nil) || got != nil && !sameLines(got.Error(), want.Error()) {
				t.Errorf("got error\n%v\nHelm gives\n%v", got, want)
			}
		})
	}
	if first := schemas.of(ch); schemas.of(ch) != first {
		t.Error("the schema was compiled twice")
	}
}

// sameLines compares errors whose lines come in no set order: the
// schema library lists the violations of an object's properties as they
// come out of a map, in Helm as here.
func sameLines(a, b string) bool {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// A schema that refers outside itself, or a chart with subcharts, keeps
// Helm's own check.
func TestValuesSchemaLeftToHelm(t *testing.T) {
	remote := &chart.Chart{Metadata: &chart.Metadata{Name: "remote"},
		Schema: []byte(`{"$ref": "https://example.test/values.schema.json"}`)}
	parent := loadEchoChart(t)
	parent.AddDependency(&chart.Chart{Metadata: &chart.Metadata{Name: "sub"}})
	for _, ch := range []*chart.Chart{remote, parent, {Metadata: &chart.Metadata{Name: "none"}}} {
		var schemas chartSchemas
		if handled, err := schemas.validate(ch, map[string]any{}); handled || err != nil {
			t.Errorf("chart %s: handled %v, %v; want it left to Helm", ch.Name(), handled, err)
		}
	}
}

// fakeHelm is Helm's action client, recording the actions it is asked for.
type fakeHelm struct {
	helmclient.ActionInterface
	installs, upgrades []bool // SkipSchemaValidation of each
}

func (f *fakeHelm) ActionClientFor(context.Context, client.Object) (helmclient.ActionInterface, error) {
	return f, nil
}

func (f *fakeHelm) Config() *action.Configuration { return &action.Configuration{} }

func (f *fakeHelm) Install(name, _ string, _ *chart.Chart, _ map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	i := &action.Install{}
	for _, o := range opts {
		if err := o(i); err != nil {
			return nil, err
		}
	}
	f.installs = append(f.installs, i.SkipSchemaValidation)
	return &release.Release{Name: name, Version: 1, Info: &release.Info{}}, nil
}

func (f *fakeHelm) Upgrade(name, _ string, _ *chart.Chart, _ map[string]any, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	u := &action.Upgrade{}
	for _, o := range opts {
		if err := o(u); err != nil {
			return nil, err
		}
	}
	f.upgrades = append(f.upgrades, u.SkipSchemaValidation)
	return &release.Release{Name: name, Version: 2, Info: &release.Info{}}, nil
}

// Values the schema refuses fail the install and the upgrade with Helm's
// error, before Helm is asked; values it takes reach Helm, which does not
// check them again.
func TestActionClientChecksValuesOnce(t *testing.T) {
	ch := loadEchoChart(t)
	fake := &fakeHelm{}
	g := &actionClientGetter{inner: fake, expected: newExpectations(), recorder: record.NewFakeRecorder(10), log: logr.Discard()}
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u"}}
	c := &actionClient{ctx: context.Background(), obj: echo, g: g}

	bad := map[string]any{"replicas": -1}
	want := helmSchemaError(ch, bad).Error()
	if _, err := c.Install("web", "ns", ch, bad); err == nil || err.Error() != want {
		t.Errorf("install: got %v, want %s", err, want)
	}
	if _, err := c.Upgrade("web", "ns", ch, bad); err == nil || err.Error() != want {
		t.Errorf("upgrade: got %v, want %s", err, want)
	}
	if len(fake.installs)+len(fake.upgrades) != 0 {
		t.Fatal("values the schema refuses reached Helm")
	}

	good := translate(t, echov1alpha1.EchoSpec{})
	if _, err := c.Install("web", "ns", ch, good); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upgrade("web", "ns", ch, good); err != nil {
		t.Fatal(err)
	}
	if len(fake.installs) != 1 || !fake.installs[0] || len(fake.upgrades) != 1 || !fake.upgrades[0] {
		t.Errorf("Helm's schema check skipped on installs %v and upgrades %v; want it skipped on each", fake.installs, fake.upgrades)
	}
}
