package helmreconciler

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Helm validates the values of every install, upgrade and dry run against
// the chart's values.schema.json, and compiles the schema anew each time
// (chartutil.ValidateAgainstSchema): most of the CPU of a render of the
// echo chart. The action clients validate instead, once per reconcile,
// against the schema compiled once per chart with the library and the
// document address Helm uses, over the values Helm validates (the chart's
// defaults coalesced with the translated values), and fail with the error
// Helm gives; Helm's own check is then skipped. A chart with subcharts, or
// whose schema refers to anything outside itself, is left to Helm.

// schemaURL is where Helm places a chart's schema to compile it; its error
// messages name it.
const schemaURL = "file:///values.schema.json"

// chartSchemas holds the compiled values schema of each chart rendered.
type chartSchemas struct{ m sync.Map }

// compiledSchema is a chart's compiled schema; nil when left to Helm.
type compiledSchema struct{ schema *jsonschema.Schema }

// of returns the compiled schema of chrt, compiling it on first use.
func (s *chartSchemas) of(chrt *chart.Chart) *jsonschema.Schema {
	if v, ok := s.m.Load(chrt); ok {
		return v.(*compiledSchema).schema
	}
	compiled := &compiledSchema{schema: compileSchema(chrt)}
	s.m.Store(chrt, compiled)
	return compiled.schema
}

// compileSchema compiles a chart's values schema as Helm does, with no
// loader: a schema that needs one fails to compile here and is left to
// Helm, as is a chart without a schema or with subcharts.
func compileSchema(chrt *chart.Chart) *jsonschema.Schema {
	if chrt.Schema == nil || len(chrt.Dependencies()) > 0 {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(chrt.Schema))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil
	}
	schema, err := c.Compile(schemaURL)
	if err != nil {
		return nil
	}
	return schema
}

// validate checks values against chrt's compiled schema as Helm's install
// and upgrade do. handled is false when the check is left to Helm.
func (s *chartSchemas) validate(chrt *chart.Chart, vals map[string]any) (handled bool, err error) {
	schema := s.of(chrt)
	if schema == nil {
		return false, nil
	}
	coalesced, err := chartutil.CoalesceValues(chrt, vals)
	if err != nil {
		return false, nil // Helm reports it
	}
	defer func() {
		if r := recover(); r != nil {
			err = &valuesSchemaError{chart: chrt.Name(), err: fmt.Errorf("unable to validate schema: %s", r)}
		}
	}()
	if err := schema.Validate(coalesced.AsMap()); err != nil {
		return true, &valuesSchemaError{chart: chrt.Name(), err: err}
	}
	return true, nil
}

// valuesSchemaError is the error of values the chart's schema refuses, as
// Helm words it.
type valuesSchemaError struct {
	chart string
	err   error
}

func (e *valuesSchemaError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n")
	return "values don't meet the specifications of the schema(s) in the following chart(s):\n" + e.chart + ":\n" + msg + "\n"
}

func (e *valuesSchemaError) Unwrap() error { return e.err }
