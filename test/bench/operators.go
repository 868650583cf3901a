//go:build linux

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The three ways of getting the echo services running.
const (
	systemEcho  = "echo"
	systemStock = "stock"
	systemFloor = "floor"
)

// allSystems lists them in report order.
var allSystems = []string{systemEcho, systemStock, systemFloor}

// The stock helm-operator's own Echo kind (see stockCRD).
const (
	stockGroup   = "stock.bench.echo.dev"
	stockVersion = "v1"
)

var (
	echoGVR  = schema.GroupVersionResource{Group: "echo.dev", Version: "v1alpha1", Resource: "echoes"}
	stockGVR = schema.GroupVersionResource{Group: stockGroup, Version: stockVersion, Resource: "echoes"}
)

// The message every Echo is created with, and the one the mass update sets.
const (
	initialMessage = "hello"
	updatedMessage = "hello again"
)

// system is one way of getting N echo services running: an operator fed
// custom resources, or the benchmark creating the objects itself.
type system interface {
	// prepare does, before any clock runs, the work create and update need
	// for names.
	prepare(ctx context.Context, names []string) error
	// launch starts the operator, if any, and waits until it is ready. It
	// may be called again after the process has been stopped.
	launch(ctx context.Context) (*operatorProcess, error)
	// create asks for the echo service name, with initialMessage.
	create(ctx context.Context, name string) error
	// update changes the message of name to updatedMessage.
	update(ctx context.Context, name string) error
	// clientRequests counts the requests the actor (the operator, or the
	// benchmark's client for floor) has sent so far, by HTTP method. p is
	// the operator process: nil for floor, and nil (no counts) while an
	// operator is not running.
	clientRequests(ctx context.Context, p *operatorProcess) (map[string]float64, error)
}

// newSystem builds the system called kind for a run on cluster, logging
// the operator into runDir.
func newSystem(kind string, env *environment, cluster *benchCluster, runDir string) (system, error) {
	logPath := filepath.Join(runDir, kind+"-operator.log")
	switch kind {
	case systemEcho:
		return &echoSystem{env: env, cluster: cluster, logPath: logPath}, nil
	case systemStock:
		return &stockSystem{env: env, cluster: cluster, logPath: logPath}, nil
	case systemFloor:
		return newFloorSystem(env, cluster)
	}
	return nil, fmt.Errorf("unknown system %q", kind)
}

// echoSystem is echo-operator's manager binary fed echo.dev Echos.
type echoSystem struct {
	env     *environment
	cluster *benchCluster
	logPath string
	// watches and version, when set, are the watches file and the version
	// of the operator an upgrade starts.
	watches, version string
}

func (*echoSystem) prepare(context.Context, []string) error { return nil }

func (s *echoSystem) launch(ctx context.Context) (*operatorProcess, error) {
	addrs, err := freeAddrs(3)
	if err != nil {
		return nil, err
	}
	metrics, probes, pprof := addrs[0], addrs[1], addrs[2]
	args := []string{
		"--metrics-bind-address=" + metrics,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + probes,
		"--leader-elect",
		"--leader-election-namespace=" + operatorNamespace,
	}
	if s.env.opts.pprof {
		args = append(args, "--pprof-bind-address="+pprof)
	}
	return launch(ctx, processSpec{
		binary: s.env.manager,
		args:   args,
		env: []string{
			"KUBECONFIG=" + s.cluster.KubeconfigPath(),
			"WATCHES_FILE=" + cmp.Or(s.watches, filepath.Join(s.env.repoRoot, "watches.yaml")),
			"OPERATOR_VERSION=" + s.version,
			"RELATED_IMAGE_ECHO=" + echoImage,
			"WATCH_NAMESPACE=",
		},
		dir:        s.env.repoRoot,
		logPath:    s.logPath,
		readyURL:   "http://" + probes + "/readyz",
		metricsURL: "http://" + metrics + "/metrics",
		pprofURL:   pprofURL(s.env.opts.pprof, pprof),
	})
}

func pprofURL(enabled bool, addr string) string {
	if !enabled {
		return ""
	}
	return "http://" + addr + "/debug/pprof"
}

func (s *echoSystem) create(ctx context.Context, name string) error {
	obj := echoObject(name, initialMessage, 1)
	_, err := s.cluster.dynamic.Resource(echoGVR).Namespace(benchNamespace).Create(ctx, obj, metav1.CreateOptions{})
	return wrap(err, "creating Echo %s", name)
}

func (s *echoSystem) update(ctx context.Context, name string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"message": updatedMessage}})
	if err != nil {
		return err
	}
	_, err = s.cluster.dynamic.Resource(echoGVR).Namespace(benchNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return wrap(err, "patching Echo %s", name)
}

func (*echoSystem) clientRequests(ctx context.Context, p *operatorProcess) (map[string]float64, error) {
	return operatorClientRequests(ctx, p)
}

// stockSystem is the stock helm-operator fed schemaless Echos whose spec is
// the chart values echo-operator would compute for the same Echo, so both
// render the same objects.
type stockSystem struct {
	env     *environment
	cluster *benchCluster
	logPath string
}

func (*stockSystem) prepare(context.Context, []string) error { return nil }

func (s *stockSystem) launch(ctx context.Context) (*operatorProcess, error) {
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	metrics, probes := addrs[0], addrs[1]
	// Every other flag keeps its default: a 1 minute reconcile period, one
	// worker per CPU, no leader election.
	return launch(ctx, processSpec{
		binary: s.env.helmOperator,
		args: []string{
			"run",
			"--watches-file=" + s.env.stockWatches,
			"--metrics-bind-address=" + metrics,
			"--health-probe-bind-address=" + probes,
		},
		env:        []string{"KUBECONFIG=" + s.cluster.KubeconfigPath(), "WATCH_NAMESPACE="},
		dir:        s.env.repoRoot,
		logPath:    s.logPath,
		readyURL:   "http://" + probes + "/readyz",
		metricsURL: "http://" + metrics + "/metrics",
	})
}

func (s *stockSystem) create(ctx context.Context, name string) error {
	// The API server gives a new object generation 1.
	vals, err := s.env.renderer.values(ctx, echoObject(name, initialMessage, 1))
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": stockGVR.GroupVersion().String(),
		"kind":       echoKind,
		"metadata":   map[string]any{"name": name, "namespace": benchNamespace},
		"spec":       vals,
	}}
	_, err = s.cluster.dynamic.Resource(stockGVR).Namespace(benchNamespace).Create(ctx, obj, metav1.CreateOptions{})
	return wrap(err, "creating stock Echo %s", name)
}

// update replaces the values with those of the updated Echo (generation 2):
// the message, and the spec generation the chart records.
func (s *stockSystem) update(ctx context.Context, name string) error {
	vals, err := s.env.renderer.values(ctx, echoObject(name, updatedMessage, 2))
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": vals})
	if err != nil {
		return err
	}
	_, err = s.cluster.dynamic.Resource(stockGVR).Namespace(benchNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return wrap(err, "patching stock Echo %s", name)
}

func (*stockSystem) clientRequests(ctx context.Context, p *operatorProcess) (map[string]float64, error) {
	return operatorClientRequests(ctx, p)
}

// operatorClientRequests reads client-go's request counter from the
// operator's metrics; nothing when no operator runs.
func operatorClientRequests(ctx context.Context, p *operatorProcess) (map[string]float64, error) {
	if p == nil {
		return nil, nil
	}
	m, err := p.metrics.scrape(ctx)
	if err != nil {
		return nil, err
	}
	return m.sumBy(restClientRequestsMetric, "method"), nil
}

// floorSystem is no operator: the benchmark creates the rendered
// Deployments and Services itself, with a client of its own whose requests
// it counts.
type floorSystem struct {
	env      *environment
	client   dynamic.Interface
	requests *requestCounter

	mu      sync.Mutex
	created map[string][]*unstructured.Unstructured
	updated map[string]*unstructured.Unstructured
}

func newFloorSystem(env *environment, cluster *benchCluster) (*floorSystem, error) {
	counter := &requestCounter{counts: map[string]float64{}}
	cfg := rest.CopyConfig(cluster.config)
	cfg.Wrap(counter.wrap)
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the floor client: %w", err)
	}
	return &floorSystem{env: env, client: client, requests: counter}, nil
}

// prepare renders every release twice, with the initial and the updated
// message, so that only API requests are timed.
func (s *floorSystem) prepare(ctx context.Context, names []string) error {
	s.created = make(map[string][]*unstructured.Unstructured, len(names))
	s.updated = make(map[string]*unstructured.Unstructured, len(names))
	for _, name := range names {
		objs, err := s.env.renderer.render(ctx, echoObject(name, initialMessage, 1))
		if err != nil {
			return err
		}
		next, err := s.env.renderer.render(ctx, echoObject(name, updatedMessage, 2))
		if err != nil {
			return err
		}
		dep := findKind(next, "Deployment")
		if dep == nil {
			return fmt.Errorf("the chart renders no Deployment for %s", name)
		}
		s.created[name], s.updated[name] = objs, dep
	}
	return nil
}

func findKind(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func (*floorSystem) launch(context.Context) (*operatorProcess, error) { return nil, nil }

// create creates the release's objects in Helm's install order.
func (s *floorSystem) create(ctx context.Context, name string) error {
	s.mu.Lock()
	objs := s.created[name]
	s.mu.Unlock()
	for _, o := range objs {
		gvr, err := floorResource(o)
		if err != nil {
			return err
		}
		if _, err := s.client.Resource(gvr).Namespace(benchNamespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// update merge-patches the Deployment with its updated rendering, as a
// client applying the new manifest would.
func (s *floorSystem) update(ctx context.Context, name string) error {
	s.mu.Lock()
	dep := s.updated[name]
	s.mu.Unlock()
	patch, err := dep.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = s.client.Resource(deploymentGVR).Namespace(benchNamespace).Patch(ctx, dep.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	return wrap(err, "patching Deployment %s", name)
}

func (s *floorSystem) clientRequests(context.Context, *operatorProcess) (map[string]float64, error) {
	return s.requests.snapshot(), nil
}

var (
	deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	serviceGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// floorResource maps the kinds the chart renders for a plain Echo to their
// resources.
func floorResource(o *unstructured.Unstructured) (schema.GroupVersionResource, error) {
	switch o.GroupVersionKind() {
	case deploymentGVR.GroupVersion().WithKind("Deployment"):
		return deploymentGVR, nil
	case serviceGVR.GroupVersion().WithKind("Service"):
		return serviceGVR, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the floor client does not create %s %s", o.GroupVersionKind(), o.GetName())
}

// requestCounter counts the requests of a client by HTTP method.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]float64
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.counts[req.Method]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]float64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// launch starts an operator process and waits until it is ready; on failure
// the process is stopped.
func launch(ctx context.Context, spec processSpec) (*operatorProcess, error) {
	p, err := startProcess(spec)
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx); err != nil {
		_ = p.stop()
		return nil, err
	}
	return p, nil
}

// wrap is fmt.Errorf("<format>: %w") for a non-nil err, else nil.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
