package releaserecords

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

func loadEchoChart(t *testing.T) *chart.Chart {
	t.Helper()
	chrt, err := loader.Load(filepath.Join("..", "..", "helm-charts", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

// fingerprintOf fingerprints a render of chrt with vals.
func fingerprintOf(t *testing.T, chrt *chart.Chart, vals map[string]any) string {
	t.Helper()
	digest, err := new(ChartDigests).Of(chrt)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := Fingerprint(digest, vals)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func TestFingerprint(t *testing.T) {
	base := loadEchoChart(t)
	vals := func() map[string]any {
		return map[string]any{"message": "hello", "replicas": 1, "service": map[string]any{"port": 80, "type": "ClusterIP"}}
	}
	want := fingerprintOf(t, base, vals())
	if len(want) != 40 {
		t.Errorf("fingerprint %q is %d characters, want 40 (a label value)", want, len(want))
	}

	same := map[string]func() (*chart.Chart, map[string]any){
		"same chart and values again": func() (*chart.Chart, map[string]any) { return base, vals() },
		"chart loaded again":          func() (*chart.Chart, map[string]any) { return loadEchoChart(t), vals() },
	}
	for name, mk := range same {
		t.Run(name, func(t *testing.T) {
			chrt, v := mk()
			if got := fingerprintOf(t, chrt, v); got != want {
				t.Errorf("fingerprint changed: %s, want %s", got, want)
			}
		})
	}

	differs := map[string]func() (*chart.Chart, map[string]any){
		"a value changed": func() (*chart.Chart, map[string]any) {
			v := vals()
			v["message"] = "hello!"
			return base, v
		},
		"a nested value changed": func() (*chart.Chart, map[string]any) {
			v := vals()
			v["service"].(map[string]any)["port"] = 81
			return base, v
		},
		"a value added": func() (*chart.Chart, map[string]any) {
			v := vals()
			v["quiesced"] = true
			return base, v
		},
		"a template changed": func() (*chart.Chart, map[string]any) {
			chrt := loadEchoChart(t)
			chrt.Templates[0].Data = append(chrt.Templates[0].Data, '\n')
			return chrt, vals()
		},
		"the chart version changed": func() (*chart.Chart, map[string]any) {
			chrt := loadEchoChart(t)
			chrt.Metadata.Version += "-1"
			return chrt, vals()
		},
		"a chart default changed": func() (*chart.Chart, map[string]any) {
			chrt := loadEchoChart(t)
			chrt.Values["port"] = 1234
			return chrt, vals()
		},
	}
	t.Run("a chart's digest is computed once", func(t *testing.T) {
		var digests ChartDigests
		chrt := loadEchoChart(t)
		first, err := digests.Of(chrt)
		if err != nil {
			t.Fatal(err)
		}
		chrt.Templates[0].Data = append(chrt.Templates[0].Data, '\n')
		again, _ := digests.Of(chrt)
		if again != first {
			t.Error("the digest of the same chart was computed again")
		}
	})

	for name, mk := range differs {
		t.Run(name, func(t *testing.T) {
			chrt, v := mk()
			if got := fingerprintOf(t, chrt, v); got == want {
				t.Errorf("fingerprint did not change")
			}
		})
	}
}

// The values fingerprint changes with the values only: a new chart or
// renderer leaves it as it was.
func TestValuesFingerprint(t *testing.T) {
	vals := func() map[string]any {
		return map[string]any{"message": "hello", "service": map[string]any{"port": 80}}
	}
	want, err := ValuesFingerprint(vals())
	if err != nil || len(want) != 40 {
		t.Fatalf("values fingerprint %q (%v), want 40 characters", want, err)
	}
	if got, _ := ValuesFingerprint(vals()); got != want {
		t.Errorf("the same values fingerprint %s, want %s", got, want)
	}
	changed := vals()
	changed["service"].(map[string]any)["port"] = 81
	if got, _ := ValuesFingerprint(changed); got == want {
		t.Error("a changed value left the values fingerprint as it was")
	}
	if render := fingerprintOf(t, loadEchoChart(t), vals()); render == want {
		t.Error("the values fingerprint equals the render fingerprint: the label could not tell a chart change from a values change")
	}
}
