package releaserecords

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sort"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
)

// FingerprintLabel, on a release Secret, identifies what the revision was
// rendered from: the chart, the values and renderVersion. A reconcile whose
// chart and values give the same fingerprint as the deployed revision
// renders the same manifest, so it skips the render and goes straight to
// drift repair.
const FingerprintLabel = "echo.dev/render-fingerprint"

// ValuesLabel, on a release Secret, identifies the values alone the
// revision was rendered with (ValuesFingerprint). When the fingerprint
// differs but this label does not, only the chart or the operator's
// rendering changed, which often leaves the manifest as it was (a new
// operator version, a chart's appVersion bumped): the release is then
// rendered and compared, and upgraded only if the manifest changed.
const ValuesLabel = "echo.dev/values-fingerprint"

// renderVersion changes when the operator changes what it does to a
// rendered manifest (the reconciler's post-rendering), so that releases deployed by an
// older operator are rendered again, and upgraded only if that changes
// them.
const renderVersion = "1"

// Fingerprint hashes a chart, given by its digest (ChartDigests), and the
// values it is rendered with: the value of FingerprintLabel. Label values
// are at most 63 characters: 40 hex digits (160 bits) are kept.
func Fingerprint(chartDigest string, vals map[string]any) (string, error) {
	v, err := encodeValues(vals)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	writeField(h, "render", []byte(renderVersion))
	writeField(h, "chart", []byte(chartDigest))
	writeField(h, "values", v)
	return hex.EncodeToString(h.Sum(nil))[:40], nil
}

// ValuesFingerprint hashes the values a chart is rendered with: the value
// of ValuesLabel, 40 hex digits as Fingerprint's.
func ValuesFingerprint(vals map[string]any) (string, error) {
	v, err := encodeValues(vals)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	writeField(h, "values", v)
	return hex.EncodeToString(h.Sum(nil))[:40], nil
}

// encodeValues encodes values canonically: json sorts map keys.
func encodeValues(vals map[string]any) ([]byte, error) {
	v, err := json.Marshal(vals)
	if err != nil {
		return nil, fmt.Errorf("encoding the values: %w", err)
	}
	return v, nil
}

// ChartDigests remembers the digest of each chart: a reconciler renders
// the same loaded chart for its whole life, and hashing it (templates,
// schema, default values) on every reconcile would be work thrown away.
type ChartDigests struct{ m sync.Map }

// Of returns the digest of what a render reads from chrt.
func (d *ChartDigests) Of(chrt *chart.Chart) (string, error) {
	if v, ok := d.m.Load(chrt); ok {
		return v.(string), nil
	}
	h := sha256.New()
	if err := writeChart(h, chrt); err != nil {
		return "", err
	}
	digest := hex.EncodeToString(h.Sum(nil))
	d.m.Store(chrt, digest)
	return digest, nil
}

// writeChart hashes what a render reads from a chart, its dependencies
// included.
func writeChart(h hash.Hash, chrt *chart.Chart) error {
	if chrt == nil {
		return nil
	}
	meta, err := json.Marshal(chrt.Metadata)
	if err != nil {
		return fmt.Errorf("encoding the chart metadata: %w", err)
	}
	writeField(h, "metadata", meta)
	writeField(h, "schema", chrt.Schema)
	for _, f := range sortedFiles(chrt.Templates) {
		writeField(h, "template:"+f.Name, f.Data)
	}
	for _, f := range sortedFiles(chrt.Files) {
		writeField(h, "file:"+f.Name, f.Data)
	}
	defaults, err := json.Marshal(chrt.Values)
	if err != nil {
		return fmt.Errorf("encoding the chart's values: %w", err)
	}
	writeField(h, "defaults", defaults)
	for _, dep := range chrt.Dependencies() {
		if err := writeChart(h, dep); err != nil {
			return err
		}
	}
	return nil
}

// writeField writes a length-prefixed field, so that no two different
// sequences of fields hash the same.
func writeField(h hash.Hash, name string, data []byte) {
	_, _ = fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(data))
	_, _ = h.Write(data)
}

func sortedFiles(files []*chart.File) []*chart.File {
	out := append([]*chart.File(nil), files...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
