//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/echo-operator/echo-operator/test/harness/managerbin"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

const (
	// echoImage is the echo server image of every Echo; nothing pulls it.
	echoImage = "registry.example.test/echo-server:bench"
	// helmOperatorVersion is the helm-operator-plugins release compared.
	helmOperatorVersion = "v0.9.1"
	// clientWorkers is the parallelism of the benchmark's creates and patches.
	clientWorkers = 32
)

// options are the command-line flags.
type options struct {
	ns       []int
	systems  []string
	idle     time.Duration
	baseline time.Duration
	timeout  time.Duration
	startup  bool
	update   bool
	upgrade  bool
	pprof    bool
	keep     bool
	out      string
	markdown string
	// merge lists the results files to merge instead of running.
	merge []string
}

// environment is what every run shares.
type environment struct {
	opts         options
	repoRoot     string
	workRoot     string
	bins         simcluster.Binaries
	manager      string
	helmOperator string
	crdPaths     []string
	stockWatches string
	renderer     *chartRenderer
	// pprofDir receives heap profiles when -pprof is set.
	pprofDir string
}

func main() {
	log.SetFlags(log.Ltime)
	// envtest, which installs the CRDs, logs through controller-runtime;
	// its messages add nothing to the benchmark's own.
	ctrllog.SetLogger(logr.Discard())
	if err := bench(); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func bench() error {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	if len(opts.merge) > 0 {
		return mergeFiles(opts, os.Args[1:])
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env, err := setUp(ctx, opts)
	if err != nil {
		return err
	}
	res := &results{
		Started:  time.Now(),
		Args:     os.Args[1:],
		Machine:  readMachineInfo(),
		Versions: env.versions(),
		Settings: env.settings(),
	}
	failed := false
	for _, n := range opts.ns {
		for _, system := range opts.systems {
			if ctx.Err() != nil {
				break
			}
			log.Printf("==== %s, N=%d ====", system, n)
			r := runOne(ctx, env, system, n)
			failed = failed || r.Error != ""
			res.Runs = append(res.Runs, r)
			// Written after every run, so a long benchmark that is
			// interrupted still leaves its results.
			if err := res.writeJSON(opts.out); err != nil {
				return err
			}
		}
	}
	res.Finished = time.Now()
	if err := env.finish(res, failed); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if failed {
		return errors.New("some runs failed; see the results file")
	}
	return nil
}

// parseFlags parses and checks the command line.
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o options
	ns := fs.String("n", "100,300,1000", "Comma-separated numbers of Echos, one run of each system per number.")
	systems := fs.String("operators", strings.Join(allSystems, ","), "Comma-separated systems to run: echo, stock, floor.")
	fs.DurationVar(&o.idle, "idle", 5*time.Minute, "Length of the idle window after the rollout.")
	fs.DurationVar(&o.baseline, "baseline", 60*time.Second, "Length of the baseline window before the operator starts.")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "Time limit of each phase (on top of its deliberate waits).")
	fs.BoolVar(&o.startup, "startup", true, "Restart echo-operator after the update and measure its catch-up.")
	fs.BoolVar(&o.update, "update", true, "Update every Echo after the idle window and measure the convergence.")
	fs.BoolVar(&o.upgrade, "upgrade", false, "Upgrade echo-operator at the end, to a new version with the same chart, then with a changed chart, and measure both.")
	fs.BoolVar(&o.pprof, "pprof", false, "Serve echo-operator's pprof endpoints and save heap profiles next to -out.")
	fs.BoolVar(&o.keep, "keep", false, "Keep the work directories with the clusters' and operators' logs.")
	fs.StringVar(&o.out, "out", filepath.Join("_output", "bench", "scale.json"), "Path of the JSON results.")
	fs.StringVar(&o.markdown, "markdown", "", "Also write the Markdown summary to this path.")
	merge := fs.String("merge", "", "Comma-separated results files to merge into -out (and -markdown) instead of running anything; later files win for the same system and N.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *merge != "" {
		return parseMergeFlags(fs, o, *merge)
	}
	var err error
	if o.ns, err = parseCounts(*ns); err != nil {
		return o, err
	}
	if o.systems, err = parseSystems(*systems); err != nil {
		return o, err
	}
	if o.idle <= 0 || o.baseline <= 0 || o.timeout <= 0 {
		return o, errors.New("-idle, -baseline and -timeout must be positive")
	}
	return o, nil
}

// parseCounts parses a comma-separated list of positive integers.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-n: %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSystems parses a comma-separated list of systems.
func parseSystems(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(allSystems, f) {
			return nil, fmt.Errorf("-operators: unknown system %q (want %s)", f, strings.Join(allSystems, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// setUp finds the binaries, builds the manager and writes the files the
// runs share into a new work directory.
func setUp(ctx context.Context, opts options) (*environment, error) {
	root, err := reporoot.Find()
	if err != nil {
		return nil, err
	}
	env := &environment{opts: opts, repoRoot: root, pprofDir: filepath.Join(filepath.Dir(opts.out), "pprof")}
	if env.bins, err = simcluster.LocateBinaries(root); err != nil {
		return nil, fmt.Errorf("locating the control plane: %w", err)
	}
	if slices.Contains(opts.systems, systemStock) {
		if env.helmOperator, err = locateHelmOperator(root); err != nil {
			return nil, err
		}
	}
	if env.workRoot, err = os.MkdirTemp("", "echo-bench-"); err != nil {
		return nil, fmt.Errorf("creating the work directory: %w", err)
	}
	log.Printf("work directory %s", env.workRoot)
	if env.renderer, err = newChartRenderer(filepath.Join(root, "helm-charts", "echo"), echoImage); err != nil {
		return nil, err
	}
	stockCRD, err := writeStockCRD(env.workRoot)
	if err != nil {
		return nil, err
	}
	env.crdPaths = []string{filepath.Join(root, "config", "crd", "bases"), stockCRD}
	if env.stockWatches, err = writeStockWatches(env.workRoot, filepath.Join(root, "helm-charts", "echo")); err != nil {
		return nil, err
	}
	if slices.Contains(opts.systems, systemEcho) {
		if env.manager, err = buildManager(ctx, root, env.workRoot); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// locateHelmOperator returns $HELM_OPERATOR, or the path that
// hack/build-helm-operator.sh builds it to.
func locateHelmOperator(root string) (string, error) {
	p := os.Getenv("HELM_OPERATOR")
	if p == "" {
		out := commandOutput(root, "bash", filepath.Join(root, "hack", "build-helm-operator.sh"), "path")
		p = strings.TrimPrefix(out, "HELM_OPERATOR=")
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return "", fmt.Errorf("no stock helm-operator at %q: run `make helm-operator` (or set HELM_OPERATOR)", p)
	}
	return p, nil
}

// writeStockWatches writes the stock helm-operator's watches file: its
// Echo kind rendered through the echo chart, every option at its default.
func writeStockWatches(dir, chart string) (string, error) {
	p := filepath.Join(dir, "stock-watches.yaml")
	body := fmt.Sprintf("- group: %s\n  version: %s\n  kind: %s\n  chart: %s\n", stockGroup, stockVersion, echoKind, chart)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("writing the stock watches file: %w", err)
	}
	return p, nil
}

// buildManager builds echo-operator's manager from the working tree.
func buildManager(ctx context.Context, root, dir string) (string, error) {
	log.Printf("building the manager")
	return managerbin.Build(ctx, root, dir)
}

func (e *environment) versions() versionInfo {
	return versionInfo{
		EchoOperator:        commandOutput(e.repoRoot, "git", "describe", "--always", "--dirty"),
		HelmOperatorPlugins: helmOperatorVersion,
		HelmOperatorBinary:  e.helmOperator,
		KubeAPIServer:       commandOutput(e.repoRoot, e.bins.APIServer, "--version"),
		KubeAPIServerBinary: e.bins.APIServer,
		EtcdBinary:          e.bins.Etcd,
		KwokBinary:          e.bins.Kwok,
	}
}

func (e *environment) settings() settings {
	return settings{
		N:               e.opts.ns,
		Systems:         e.opts.systems,
		BaselineSeconds: e.opts.baseline.Seconds(),
		IdleSeconds:     e.opts.idle.Seconds(),
		SettleSeconds:   settle.Seconds(),
		PhaseTimeout:    e.opts.timeout.Seconds(),
		Startup:         e.opts.startup,
		Workers:         clientWorkers,
		ClientQPS:       clientQPS,
		ClientBurst:     clientBurst,
		ControllerQPS:   controllerManagerQPS,
		ControllerBurst: controllerManagerBurst,
		EchoImage:       echoImage,
		EchoReplicas:    echoReplicas,
		// helm-operator's defaults, which the stock run keeps.
		StockWorkers:       runtime.NumCPU(),
		StockReconcileTime: "1m0s",
	}
}

// finish writes the results and the Markdown, and removes the work
// directory unless it is to be kept.
func (e *environment) finish(res *results, failed bool) error {
	if err := writeReport(res, e.opts.out, e.opts.markdown); err != nil {
		return err
	}
	if e.opts.keep || failed {
		log.Printf("logs kept in %s", e.workRoot)
		return nil
	}
	return os.RemoveAll(e.workRoot)
}

// writeReport writes the results to out, prints the Markdown and, when
// markdownPath is set, writes it there too.
func writeReport(res *results, out, markdownPath string) error {
	if err := res.writeJSON(out); err != nil {
		return err
	}
	md := markdown(res)
	fmt.Print(md)
	if markdownPath != "" {
		if err := os.MkdirAll(filepath.Dir(markdownPath), 0o755); err != nil {
			return fmt.Errorf("creating the Markdown directory: %w", err)
		}
		if err := os.WriteFile(markdownPath, []byte(md), 0o644); err != nil {
			return fmt.Errorf("writing the Markdown: %w", err)
		}
	}
	log.Printf("results in %s", out)
	return nil
}
