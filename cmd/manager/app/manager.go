package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/controllers"
	"github.com/echo-operator/echo-operator/internal/cachetrim"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/decodeguard"
	"github.com/echo-operator/echo-operator/internal/events"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
	"github.com/echo-operator/echo-operator/internal/liveapi"
	"github.com/echo-operator/echo-operator/internal/managerpolicy"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/internal/servingcert"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// Options configure the manager.
type Options struct {
	MetricsAddr   string
	MetricsSecure bool
	// MetricsCertDir holds the metrics endpoint's certificate (tls.crt,
	// tls.key), reloaded when it changes; empty, the endpoint serves a
	// self-signed certificate made at start.
	MetricsCertDir   string
	ProbeAddr        string
	PprofAddr        string
	LeaderElect      bool
	LeaderElectionNS string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration    time.Duration
	RenewDeadline    time.Duration
	RetryPeriod      time.Duration
	GracefulShutdown time.Duration
	// QPS and Burst limit the requests to the API server.
	QPS   float32
	Burst int
	// WatchNamespaces limits the operator to these namespaces; empty means all.
	WatchNamespaces []string
	// OperatorNamespace is the operator's own namespace, which holds the
	// key release records are signed with (see releasetrust).
	OperatorNamespace string

	Helm helmreconciler.Options

	// MoverImage is the operator's own image, run by backup and restore Jobs.
	MoverImage string
	// MoverEnv is passed on to the data mover's pods: the cluster's proxy
	// settings (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, as OLM sets them on the
	// operator's Deployment).
	MoverEnv []corev1.EnvVar
	// PodLogs reads the data mover's log of a finished Job, kept in the
	// backup's or restore's status; nil reads it through the API server.
	PodLogs controllers.PodLogReader

	// ProgressStatusDelay holds back Echo status changes that only report
	// progress; 0 means controllers.DefaultProgressStatusDelay.
	ProgressStatusDelay time.Duration
	// RolloutStatusDelay holds back the progress of an install or of a new
	// generation of a Ready Echo; 0 means controllers.DefaultRolloutStatusDelay.
	RolloutStatusDelay time.Duration

	// LiveAPI configures the aggregated API server; an empty or "0"
	// BindAddress disables it.
	LiveAPI liveapi.Options
	// LiveAPICertSecret, when set, is the Secret of OperatorNamespace
	// where the operator keeps the live API's certificate itself (see
	// servingcert); it excludes LiveAPI.CertDir.
	LiveAPICertSecret string
	// LiveAPIService, when set with LiveAPICertSecret, is the Service of
	// OperatorNamespace in front of the replicas: the leader registers the
	// live API's APIService itself, pointing at it, while the live API is
	// served, and removes it when the operator starts with the live API
	// off.
	LiveAPIService string
	// ManagerDeployment is the manager's own Deployment, in
	// OperatorNamespace: the leader keeps the NetworkPolicy of its pods
	// (internal/managerpolicy). Empty: no policy (a manager run outside
	// the cluster).
	ManagerDeployment string
	// LiveAPISources are the control plane's addresses, the only sources
	// the NetworkPolicy admits to the live API's port; none: any source.
	LiveAPISources []netip.Prefix
	// StorageEndpoints are the endpoints the operator's administrator
	// allows every ServiceAccount's token and SSE-C key to be sent to,
	// besides those each ServiceAccount or Secret lists: the backups,
	// restores and the live API's listings all check them.
	StorageEndpoints storagesecrets.ClusterEndpoints

	// Now is the clock of the backup schedules; nil means time.Now.
	Now func() time.Time
}

// NewScheme returns the scheme of every kind the operator reads or writes.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(echov1alpha1.AddToScheme(scheme))
	return scheme
}

// NewManager builds the manager with every reconciler registered. Every
// Event it records goes through the events.k8s.io/v1 API, from one
// broadcaster that stops once the manager has stopped.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	// Every client below, Helm's included, is built from cfg: each counts
	// its requests (echo_operator_kube_api_requests_total).
	cfg = rest.CopyConfig(cfg)
	opmetrics.CountAPIRequests(cfg)
	signer, err := loadSigner(cfg, o.OperatorNamespace)
	if err != nil {
		return nil, err
	}
	o.Helm.Signer = signer
	if o.QPS > 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = o.QPS, o.Burst
	}
	scheme := NewScheme()
	broadcaster, err := events.NewBroadcaster(cfg, scheme, ctrl.Log.WithName("events"))
	if err != nil {
		return nil, err
	}
	mgr, err := newManager(cfg, scheme, broadcaster, o)
	if err != nil {
		broadcaster.Stop()
		return nil, err
	}
	return &eventsManager{Manager: mgr, events: broadcaster}, nil
}

// eventsManager stops the Event broadcaster after the manager: once
// everything that records Events has stopped, leader election included.
type eventsManager struct {
	ctrl.Manager
	events *events.Broadcaster
}

// Start runs the manager until ctx ends, then stops the broadcaster.
func (m *eventsManager) Start(ctx context.Context) error {
	defer m.events.Stop()
	return m.Manager.Start(ctx)
}

// newManager builds the manager and its reconcilers, which record their
// Events through broadcaster.
func newManager(cfg *rest.Config, scheme *runtime.Scheme, broadcaster *events.Broadcaster, o Options) (ctrl.Manager, error) {
	recorder := broadcaster.NewRecorder(echov1alpha1.EventAction)
	lock, err := leaderElectionLock(cfg, o, broadcaster.NewRecorder(func(string) string { return leaderElectionAction }))
	if err != nil {
		return nil, err
	}
	metricsServer, err := metricsOptions(o)
	if err != nil {
		return nil, err
	}
	undecodable := decodeguard.NewReporter(ctrl.Log.WithName("decodeguard"))
	undecodable.SetRecorder(recorder)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                              scheme,
		Metrics:                             metricsServer,
		HealthProbeBindAddress:              o.ProbeAddr,
		PprofBindAddress:                    o.PprofAddr,
		LeaderElection:                      o.LeaderElect,
		LeaderElectionID:                    leaderElectionID,
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionReleaseOnCancel:       true,
		LeaseDuration:                       durationOrNil(o.LeaseDuration),
		RenewDeadline:                       durationOrNil(o.RenewDeadline),
		RetryPeriod:                         durationOrNil(o.RetryPeriod),
		GracefulShutdownTimeout:             &o.GracefulShutdown,
		Cache:                               cacheOptions(o.WatchNamespaces, o.Helm.Signer),
		// Echo is cached once, typed, also for the Helm reconciler's
		// unstructured reads. Objects of the operator's kinds that do not
		// decode are kept out of the cache and reported, so that one
		// tenant's bad object cannot stop the informer of its kind.
		NewCache: decodeguard.NewCache(echov1alpha1.GroupVersion.Group, undecodable.Report,
			helmreconciler.NewTypedCache(echov1alpha1.GroupVersion.WithKind("Echo"))),
		Client: clientOptions(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := setupReconcilers(mgr, o, recorder); err != nil {
		return nil, err
	}
	if err := addManagerPolicy(mgr, o); err != nil {
		return nil, err
	}
	if err := addLiveAPI(mgr, cfg, o); err != nil {
		return nil, err
	}
	if err := opmetrics.Register(metrics.Registry, opmetrics.NewCollector(mgr.GetClient())); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", cacheSynced(mgr.GetCache())); err != nil {
		return nil, fmt.Errorf("adding the ready check: %w", err)
	}
	return mgr, nil
}

// setupReconcilers registers the Helm reconcilers and the Go controllers,
// which record their Events with recorder.
func setupReconcilers(mgr ctrl.Manager, o Options, recorder record.EventRecorder) error {
	o.Helm.Recorder = recorder
	if err := (&controllers.EchoReleaseReconciler{Helm: o.Helm}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := controllers.IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := (&controllers.EchoStatusReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                recorder,
		MaxConcurrentReconciles: o.Helm.DefaultMaxConcurrentReconciles,
		ProgressStatusDelay:     o.ProgressStatusDelay,
		RolloutStatusDelay:      o.RolloutStatusDelay,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Echo controller: %w", err)
	}
	storageSecrets, err := controllers.NewStorageSecretCache(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper(), o.WatchNamespaces)
	if err != nil {
		return err
	}
	if err := mgr.Add(storageSecrets); err != nil {
		return fmt.Errorf("adding the cache of storage Secrets: %w", err)
	}
	podLogs, err := podLogReader(mgr.GetConfig(), o)
	if err != nil {
		return err
	}
	if err := (&controllers.EchoBackupReconciler{
		StorageSecrets:   storageSecrets,
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		ReleaseVerifier:  o.Helm.Signer,
		JobSigner:        o.Helm.Signer,
		Scheme:           mgr.GetScheme(),
		Recorder:         recorder,
		MoverImage:       o.MoverImage,
		MoverEnv:         o.MoverEnv,
		StorageEndpoints: o.StorageEndpoints,
		PodLogs:          podLogs,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EchoBackup controller: %w", err)
	}
	if err := (&controllers.EchoFinalBackupReconciler{
		Client:   mgr.GetClient(),
		Recorder: recorder,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the final backup controller: %w", err)
	}
	if err := (&controllers.EchoBackupScheduleReconciler{
		Client:   mgr.GetClient(),
		Recorder: recorder,
		Clock:    o.Now,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EchoBackupSchedule controller: %w", err)
	}
	if err := (&controllers.EchoBackupLocationReconciler{
		Client:   mgr.GetClient(),
		Recorder: recorder,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EchoBackupLocation controller: %w", err)
	}
	if err := (&controllers.EchoRestoreReconciler{
		StorageSecrets:   storageSecrets,
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Scheme:           mgr.GetScheme(),
		Recorder:         recorder,
		MoverImage:       o.MoverImage,
		MoverEnv:         o.MoverEnv,
		JobSigner:        o.Helm.Signer,
		Clock:            o.Now,
		StorageEndpoints: o.StorageEndpoints,
		PodLogs:          podLogs,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EchoRestore controller: %w", err)
	}
	return nil
}

// podLogReader is o.PodLogs, or else reads pod logs through the API server
// (pods/log), as the manager's client does, with its rate limits.
func podLogReader(cfg *rest.Config, o Options) (controllers.PodLogReader, error) {
	if o.PodLogs != nil {
		return o.PodLogs, nil
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for the data mover's logs: %w", err)
	}
	return controllers.ClientsetPodLogs(clientset), nil
}

// addManagerPolicy adds, on the leader, the keeper of the NetworkPolicy of
// the manager's own pods, when the manager knows its Deployment.
func addManagerPolicy(mgr ctrl.Manager, o Options) error {
	if o.ManagerDeployment == "" {
		return nil
	}
	if o.OperatorNamespace == "" {
		return errors.New("--manager-deployment needs the operator's namespace (--operator-namespace)")
	}
	keeper := &managerpolicy.Keeper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.OperatorNamespace,
		Deployment: o.ManagerDeployment, LiveAPISources: o.LiveAPISources, Log: ctrl.Log.WithName("managerpolicy")}
	if err := mgr.Add(keeper); err != nil {
		return fmt.Errorf("adding the keeper of the manager's NetworkPolicy: %w", err)
	}
	return nil
}

// clientOptions are the manager's client's: the Helm reconcilers read
// their objects as unstructured, and those reads are served from the cache
// too; but APIServices, which the operator may read by name only (its
// RBAC grants no list or watch, cluster-wide), are read from the API
// server.
func clientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true,
		DisableFor: []client.Object{servingcert.EmptyAPIService()}}}
}

// addLiveAPI adds the aggregated API server, when it is enabled: it
// serves on every replica, from the manager's cache. With
// LiveAPICertSecret, the leader keeps the certificate in that Secret too.
func addLiveAPI(mgr ctrl.Manager, cfg *rest.Config, o Options) error {
	if o.LiveAPI.BindAddress == "" || o.LiveAPI.BindAddress == "0" {
		if o.LiveAPIService == "" || o.LiveAPICertSecret == "" {
			return nil
		}
		// Off, in an install that registers it: no APIService may be
		// left pointing at a Service nothing serves.
		if err := mgr.Add(&servingcert.Unregisterer{Client: mgr.GetClient(), APIService: livev1alpha1.APIServiceName,
			Namespace: o.OperatorNamespace, Service: o.LiveAPIService, Log: ctrl.Log.WithName("servingcert")}); err != nil {
			return fmt.Errorf("adding the live API's unregisterer: %w", err)
		}
		return nil
	}
	if o.LiveAPIService != "" && o.LiveAPICertSecret == "" {
		return errors.New("--live-api-service needs --live-api-cert-secret: the operator registers the APIService with the CA it keeps")
	}
	if o.LiveAPICertSecret != "" {
		if o.LiveAPI.CertDir != "" {
			return errors.New("--live-api-cert-dir and --live-api-cert-secret exclude each other: the certificate is either mounted or kept by the operator")
		}
		provider, err := addServingCertRotator(mgr, cfg, o)
		if err != nil {
			return err
		}
		o.LiveAPI.ServingCert = provider
	}
	o.LiveAPI.StorageEndpoints = o.StorageEndpoints
	server, err := liveapi.New(o.LiveAPI, liveapi.Sources{Cache: mgr.GetCache(), API: mgr.GetAPIReader(), Verifier: o.Helm.Signer})
	if err != nil {
		return err
	}
	if err := mgr.Add(server); err != nil {
		return fmt.Errorf("adding the live API server: %w", err)
	}
	return nil
}

// addServingCertRotator adds, on the leader, the Rotator that keeps the
// live API's certificate in the Secret LiveAPICertSecret, and returns the
// provider every replica serves it from.
func addServingCertRotator(mgr ctrl.Manager, cfg *rest.Config, o Options) (*servingcert.SecretProvider, error) {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for the live API's certificate: %w", err)
	}
	log := ctrl.Log.WithName("servingcert")
	provider := servingcert.NewSecretProvider(clientset, o.OperatorNamespace, o.LiveAPICertSecret, log)
	rotator := &servingcert.Rotator{
		Client:     mgr.GetClient(),
		Reader:     mgr.GetAPIReader(),
		Namespace:  o.OperatorNamespace,
		SecretName: o.LiveAPICertSecret,
		APIService: livev1alpha1.APIServiceName,
		Service:    o.LiveAPIService,
		Owner:      servingcert.OwnerClusterRole,
		Lifetimes:  servingcert.DefaultLifetimes,
		Changes:    provider.Changes(),
		Log:        log,
	}
	if err := mgr.Add(rotator); err != nil {
		return nil, fmt.Errorf("adding the live API's certificate rotator: %w", err)
	}
	return provider, nil
}

// cacheSynced is ready once every informer the controllers started has
// synced: until then the operator would act on a partial view.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 100*time.Millisecond)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("caches are not synced yet")
		}
		return nil
	}
}

// loadSigner reads, or creates on first start, the key release records
// are signed with, in the operator's namespace. It is read once, before
// the cache starts: the cache checks every release Secret it holds.
func loadSigner(cfg *rest.Config, namespace string) (*releasetrust.Signer, error) {
	if namespace == "" {
		return nil, errors.New("the operator's namespace is unknown: set --operator-namespace (or OPERATOR_NAMESPACE) to the namespace that holds the release signing key")
	}
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a client for the release signing key: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return releasetrust.LoadOrCreateSigner(ctx, c, namespace)
}

// cacheOptions scopes the cache to the watched namespaces, to the objects
// the chart renders and to Helm's release Secrets, without managed fields:
// it holds those, not every Deployment, Service or Secret of the cluster.
func cacheOptions(namespaces []string, signer *releasetrust.Signer) cache.Options {
	moverObjects := labels.SelectorFromSet(labels.Set{chart.ManagedByLabel: echov1alpha1.ManagedBy})
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// Release Secrets are cached without the releases, which
			// are read from the API server when needed, and with the
			// verdict of their signature.
			&corev1.Secret{}: {
				Label:     chart.ReleaseRecordSelector(),
				Transform: releaserecords.CacheTransform(signer),
			},
			// Anyone who may write in a namespace can label objects as
			// the operator's or the chart's: the cache keeps each whole
			// only up to a bound, and a backup's ConfigMap, whose
			// existence is all the operator reads, as a stub.
			&batchv1.Job{}:      {Label: moverObjects, Transform: cachetrim.Bounded(cachetrim.MaxObjectBytes)},
			&corev1.ConfigMap{}: {Label: moverObjects, Transform: cachetrim.MetadataOnly()},
			&corev1.Pod{}:       {Label: moverObjects, Transform: cachetrim.Bounded(cachetrim.MaxObjectBytes)},
		},
	}
	for _, obj := range helmreconciler.ChartObjectTypes() {
		opts.ByObject[obj] = cache.ByObject{Label: chart.ObjectSelector(), Transform: cachetrim.Bounded(cachetrim.MaxObjectBytes)}
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

func metricsOptions(o Options) (metricsserver.Options, error) {
	m := metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: o.MetricsSecure}
	if !o.MetricsSecure {
		if o.MetricsCertDir != "" {
			return m, errors.New("--metrics-cert-dir serves HTTPS: it needs --metrics-secure")
		}
		return m, nil
	}
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/2 is off: it is exposed to the rapid-reset and stream
	// cancellation attacks.
	m.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if o.MetricsCertDir != "" {
		// controller-runtime falls back to a self-signed certificate when
		// the files are missing: a certificate asked for and not found is
		// an error instead.
		for _, name := range []string{metricsCertName, metricsKeyName} {
			if _, err := os.Stat(filepath.Join(o.MetricsCertDir, name)); err != nil {
				return m, fmt.Errorf("--metrics-cert-dir: the metrics certificate needs %s: %w", name, err)
			}
		}
		m.CertDir, m.CertName, m.KeyName = o.MetricsCertDir, metricsCertName, metricsKeyName
	}
	return m, nil
}

// The files of the metrics certificate in MetricsCertDir, as a
// kubernetes.io/tls Secret mounted there holds them.
const (
	metricsCertName = "tls.crt"
	metricsKeyName  = "tls.key"
)

// durationOrNil leaves a zero duration to the manager's default.
func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}
