package helmreconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"github.com/operator-framework/helm-operator-plugins/pkg/values"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// Options configure the Helm reconcilers.
type Options struct {
	// WatchesFile is the path of watches.yaml.
	WatchesFile string
	// DefaultEchoImage is the echo server image used when an Echo names none.
	DefaultEchoImage string
	// MaxReleaseHistory bounds the stored revisions of each release.
	MaxReleaseHistory int
	// DefaultMaxConcurrentReconciles applies to entries that set none.
	DefaultMaxConcurrentReconciles int
	// Signer signs the release records the operator writes and verifies
	// those it reads (see releasetrust).
	Signer *releasetrust.Signer
	// Recorder records the reconcilers' Events: the library's own and the
	// release Events of the action clients.
	Recorder record.EventRecorder
}

var echoGVK = echov1alpha1.GroupVersion.WithKind("Echo")

// SetupWithManager builds a Helm reconciler for every entry of the watches
// file and registers it with the manager.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Signer == nil {
		return errors.New("the Helm reconcilers need a release signer")
	}
	if opts.Recorder == nil {
		return errors.New("the Helm reconcilers need an Event recorder")
	}
	ws, err := watches.Load(opts.WatchesFile)
	if err != nil {
		return fmt.Errorf("loading %s: %w", opts.WatchesFile, err)
	}
	if err := releaserecords.IndexByRelease(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing the release Secrets: %w", err)
	}
	for _, w := range ws {
		if err := setupReconciler(mgr, w, opts); err != nil {
			return fmt.Errorf("registering the reconciler of %s: %w", w.GroupVersionKind, err)
		}
	}
	return nil
}

// setupReconciler builds and registers the reconciler of one entry. The
// Echo's runs on a fair controller with the operator's own watches; an
// entry of another kind (none ships) is set up by the library.
func setupReconciler(mgr ctrl.Manager, w watches.Watch, opts Options) error {
	rOpts, err := reconcilerOptions(mgr, w, opts)
	if err != nil {
		return err
	}
	if w.GroupVersionKind != echoGVK {
		r, err := reconciler.New(rOpts...)
		if err != nil {
			return err
		}
		return r.SetupWithManager(mgr)
	}
	r, err := reconciler.New(append(rOpts, echoReconcilerOptions(mgr, opts)...)...)
	if err != nil {
		return err
	}
	setups := []reconciler.ControllerSetupFunc{watchFinalBackups(mgr)}
	if w.WatchDependentResources == nil || *w.WatchDependentResources {
		// The chart's objects are watched through the typed cache
		// instead of the stock unstructured informers.
		setups = append(setups, watchChartObjects(mgr, &echov1alpha1.Echo{}))
	}
	return setupFairController(mgr, r, w, workers(w, opts), setups...)
}

// workers is the entry's number of concurrent reconciles.
func workers(w watches.Watch, opts Options) int {
	if w.MaxConcurrentReconciles != nil {
		return *w.MaxConcurrentReconciles
	}
	return opts.DefaultMaxConcurrentReconciles
}

// reconcilerOptions are the options of every entry's reconciler.
func reconcilerOptions(mgr ctrl.Manager, w watches.Watch, opts Options) ([]reconciler.Option, error) {
	log := ctrl.Log.WithName("helm").WithValues("kind", w.Kind)
	acg, err := newActionClientGetter(mgr, opts.Signer, opts.Recorder, log)
	if err != nil {
		return nil, err
	}
	// The echo chart is the operator's own, linted and tested: what it
	// renders needs no OpenAPI check on top of the API server's.
	acg.skipOpenAPIValidation = w.GroupVersionKind == echoGVK

	var period time.Duration
	if w.ReconcilePeriod != nil {
		period = w.ReconcilePeriod.Duration
	}
	rOpts := []reconciler.Option{
		reconciler.WithGroupVersionKind(w.GroupVersionKind),
		reconciler.WithChart(*w.Chart),
		reconciler.WithLog(log),
		reconciler.WithEventRecorder(opts.Recorder),
		reconciler.WithActionClientGetter(acg),
		reconciler.WithOverrideValues(w.OverrideValues),
		reconciler.SkipDependentWatches(w.WatchDependentResources != nil && !*w.WatchDependentResources),
		reconciler.WithMaxConcurrentReconciles(workers(w, opts)),
		reconciler.WithReconcilePeriod(period),
		reconciler.WithMaxReleaseHistory(opts.MaxReleaseHistory),
		reconciler.WithPauseReconcileHandler(pauseUnlessDeleting),
	}
	if w.Selector != nil {
		rOpts = append(rOpts, reconciler.WithSelector(*w.Selector))
	}
	return rOpts, nil
}

// uninstallWaitTimeout is how long an uninstall waits for the deleted
// object to leave the cache: the library's default.
const uninstallWaitTimeout = 30 * time.Second

// echoReconcilerOptions complete the Echo's reconciler. It is registered
// by setupFairController rather than the library's SetupWithManager, so
// they set every default SetupWithManager would otherwise fill in.
func echoReconcilerOptions(mgr ctrl.Manager, opts Options) []reconciler.Option {
	return []reconciler.Option{
		reconciler.WithValueTranslator(EchoTranslator{DefaultImage: opts.DefaultEchoImage}),
		//nolint:staticcheck // the library's SetupWithManager sets this identity mapper when none is given, and the reconciler calls it
		reconciler.WithValueMapper(values.MapperFunc(func(v chartutil.Values) chartutil.Values { return v })),
		reconciler.WithWaitForDeletionTimeout(uninstallWaitTimeout),
		reconciler.WithClient(newStatusClient(mgr.GetClient(), echoGVK)),
		// Echo is in the scheme as a typed kind already.
		reconciler.SkipPrimaryGVKSchemeRegistration(true),
		// The chart's objects are watched by setupReconciler, or not at
		// all.
		reconciler.SkipDependentWatches(true),
	}
}

// pauseUnlessDeleting pauses the release of an object annotated with
// echov1alpha1.PauseAnnotation, except while the object is being deleted: deletion must
// not hang on a forgotten annotation.
func pauseUnlessDeleting(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	if obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	return reconciler.PauseReconcileIfAnnotationTrue(echov1alpha1.PauseAnnotation)(ctx, obj)
}

// newActionClientGetter builds the stock action client getter and wraps it.
func newActionClientGetter(mgr ctrl.Manager, signer *releasetrust.Signer, recorder record.EventRecorder, log logr.Logger) (*actionClientGetter, error) {
	kinds, err := chartObjectKinds(mgr)
	if err != nil {
		return nil, fmt.Errorf("resolving the chart's kinds: %w", err)
	}
	g := &actionClientGetter{
		cache:       mgr.GetCache(),
		cachedKinds: kinds,
		live:        mgr.GetAPIReader(),
		writer:      mgr.GetClient(),
		mapper:      mgr.GetRESTMapper(),
		scheme:      mgr.GetScheme(),
		expected:    newExpectations(),
		manifests:   newManifestMemo(),
		signer:      signer,
		recorder:    recorder,
		log:         log,
	}
	acg, err := helmclient.NewActionConfigGetter(mgr.GetConfig(), mgr.GetRESTMapper(),
		helmclient.StorageDriverMapper(g.storageDriverMapper()),
		helmclient.ClientRestConfigMapper(g.clientRestConfig))
	if err != nil {
		return nil, fmt.Errorf("creating the Helm action config getter: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client of Helm's capabilities: %w", err)
	}
	guarded := guardedConfigGetter{inner: acg, kinds: kinds, capabilities: newCapabilitiesCache(dc), live: mgr.GetAPIReader(), log: log}
	if g.inner, err = helmclient.NewActionClientGetter(guarded); err != nil {
		return nil, fmt.Errorf("creating the Helm action client getter: %w", err)
	}
	return g, nil
}

// guardedConfigGetter hands Helm's actions a Kubernetes client confined by
// a manifestGuard to the chart's kinds in the object's namespace, and the
// cluster's capabilities as the process last discovered them.
type guardedConfigGetter struct {
	inner        helmclient.ActionConfigGetter
	kinds        map[schema.GroupVersionKind]bool
	capabilities *capabilitiesCache
	// live reads, from the API server, what the guard checks before a
	// delete.
	live client.Reader
	log  logr.Logger
}

// ActionConfigFor implements helmclient.ActionConfigGetter.
func (g guardedConfigGetter) ActionConfigFor(ctx context.Context, obj client.Object) (*action.Configuration, error) {
	cfg, err := g.inner.ActionConfigFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	if cfg.Capabilities, err = g.capabilities.get(); err != nil {
		return nil, err
	}
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return nil, fmt.Errorf("the Helm Kubernetes client is a %T, which cannot be guarded", cfg.KubeClient)
	}
	log := g.log.WithValues("namespace", obj.GetNamespace(), "name", obj.GetName())
	cfg.KubeClient = &guardedKubeClient{
		Client: kc,
		guard:  newManifestGuard(obj.GetNamespace(), g.kinds),
		owner:  obj.GetUID(),
		live:   g.live,
		log:    func(msg string, kv ...any) { log.Info(msg, kv...) },
	}
	return cfg, nil
}
