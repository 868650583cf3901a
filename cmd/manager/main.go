package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA time zones; the image has no zone database

	olmproxy "github.com/operator-framework/operator-lib/proxy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/internal/datamover"
	"github.com/echo-operator/echo-operator/internal/egress"
	"github.com/echo-operator/echo-operator/internal/managerpolicy"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// version is the operator's version, stamped by the build
// (-ldflags "-X main.version=$(VERSION)"); the manager logs it at start.
// $OPERATOR_VERSION replaces it, for a build that was not stamped.
var version = "dev"

// defaultEchoImage is the echo server image when RELATED_IMAGE_ECHO is unset.
const defaultEchoImage = "quay.io/echo-operator/echo-server:v0.1.0"

// defaultOperatorImage is the operator's own image, which the data mover
// Jobs run, when RELATED_IMAGE_OPERATOR is unset.
const defaultOperatorImage = "quay.io/echo-operator/echo-operator:v0.1.0"

// managerGCPercent is the manager's GOGC unless GOGC is set. The heap is
// mostly the cache, which lives long, plus short bursts of Helm renders:
// a heap goal of 1.5x the live heap instead of 2x trims the peaks of a mass
// rollout for little CPU.
const managerGCPercent = 50

// memoryLimitEnv holds the container's memory limit in bytes, from the
// downward API (config/manager/manager.yaml). Unless GOMEMLIMIT is set,
// the Go runtime's soft memory limit is that limit less memoryHeadroom,
// the share left to what the runtime does not count (thread stacks, the
// binary's mapped code): the collector works harder as the heap nears it,
// instead of the kernel killing the pod.
const (
	memoryLimitEnv = "MEMORY_LIMIT"
	memoryHeadroom = 0.15
)

// Leader election defaults, measured by test/failover on a simulated
// cluster (docs/benchmarks.md, "Leader failover").
//
// Takeover: a standby replaces a leader that died without releasing the
// Lease (SIGKILL, node loss) once the lease has expired in its own view.
// It times the expiry from the poll at which it saw the last renewal, and
// client-go polls every RetryPeriod plus up to 120% jitter, so it leads
// LeaseDuration-RetryPeriod to LeaseDuration+4.4*RetryPeriod after the
// death: 13 to 18.4s with 14s/1s. Measured: 14.1 to 17.1s to the Lease,
// the first reconcile 0.2 to 0.4s later. The former 15s/10s/2s allowed up
// to 23.8s and took 15.0 to 19.9s.
//
// Control-plane restarts: the leader gives up, and the manager exits, when
// it has failed to renew for RenewDeadline, retrying every RetryPeriod, so
// it rides out any outage shorter than RenewDeadline-RetryPeriod: 10s with
// 11s/1s, 8s with the former 10s/2s. A graceful kube-apiserver restart
// left clients without a successful request for 4.4 to 8.5s; under the
// former settings the leader's renewals once came 10.5s apart across a
// control-plane restart, 1.5s short of losing the Lease.
//
// LeaseDuration-RenewDeadline-RetryPeriod, 2s, is how long before a
// standby may take over a leader that could not renew has stopped.
//
// The price is the renewal rate: the leader renews every second (60
// requests a minute instead of 30) and a standby reads the Lease about 36
// times a minute instead of 18.
const (
	defaultLeaseDuration = 14 * time.Second
	defaultRenewDeadline = 11 * time.Second
	defaultRetryPeriod   = 1 * time.Second
)

func main() {
	// "manager backup|restore|inspect|delete|copy ..." run the data mover of the
	// backup, restore, copy and artifact deletion Jobs (internal/datamover/cli.go).
	if code, ok := datamover.RunCommand(os.Args[1:]); ok {
		os.Exit(code)
	}
	opts := parseFlags()
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(managerGCPercent)
	}
	if limit, ok := goMemoryLimit(); ok {
		debug.SetMemoryLimit(limit)
	}
	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "Manager exited with an error")
		os.Exit(1)
	}
}

func parseFlags() app.Options {
	var o app.Options
	var qps float64
	var burst int
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint (:8443 for HTTPS, :8080 for HTTP); 0 disables it.")
	flag.BoolVar(&o.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized by the API server.")
	flag.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "Directory holding the metrics endpoint's certificate, tls.crt and tls.key (a kubernetes.io/tls Secret mounted there), reloaded when they change; empty: a self-signed certificate made at start.")
	flag.StringVar(&o.LiveAPI.BindAddress, "live-api-bind-address", envOr("LIVE_API_BIND_ADDRESS", "0"), "Address of the live API's HTTPS endpoint (live.echo.dev, served to kube-apiserver through an APIService; :9443 in the deployment); 0 disables it. Defaults to $LIVE_API_BIND_ADDRESS, which turns it on in an OLM install (the Subscription's config.env).")
	flag.StringVar(&o.LiveAPI.CertDir, "live-api-cert-dir", "", "Directory holding the live API's serving certificate: tls.crt and tls.key, or apiserver.crt and apiserver.key as OLM mounts them; empty: see --live-api-cert-secret.")
	flag.StringVar(&o.ManagerDeployment, "manager-deployment", "", "The manager's own Deployment, in the operator's namespace: the leader keeps the NetworkPolicy of its pods (live API port open to --live-api-sources, metrics port to namespaces labelled metrics: enabled), owned by it. Empty: no NetworkPolicy.")
	flag.StringVar(&o.LiveAPIService, "live-api-service", "", "Service, in the operator's namespace, in front of the replicas' live API: with --live-api-cert-secret, the leader registers the APIService "+livev1alpha1.APIServiceName+" itself, pointing at it, while the live API is on, and deletes it when the operator starts with the live API off.")
	flag.StringVar(&o.LiveAPICertSecret, "live-api-cert-secret", "", "Secret, in the operator's namespace, where the operator keeps the live API's CA and serving certificate itself: the leader issues and renews them and writes the CA into the caBundle of APIService "+livev1alpha1.APIServiceName+"; every replica serves the certificate from it. Empty, with no --live-api-cert-dir either: a self-signed certificate made at start.")
	storageAllow, clusterNetworks, storageProxy, err := egressFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	flag.Var(&storageAllow, egress.AllowFlag, "CIDRs (comma-separated, or the flag repeated) that the live API's listings of EchoBackupLocations may connect to although a denied range (loopback, private, CGNAT, link-local, unique local, NAT64, --"+egress.ClusterNetworksFlag+", ...) holds them, e.g. an in-cluster S3 service's address: the most specific range decides. Adds to $"+egress.AllowEnv+".")
	flag.Var(&clusterNetworks, egress.ClusterNetworksFlag, "The cluster's Service and pod CIDRs (comma-separated, or the flag repeated): the live API's listings of EchoBackupLocations never connect there, unless --"+egress.AllowFlag+" names a range as specific or more. Adds to $"+egress.ClusterNetworksEnv+".")
	flag.Func(egress.ProxyFlag, "HTTP proxy (http://host:port) that the live API's listings of EchoBackupLocations go through: the manager resolves the endpoint's host, checks every address with the egress policy, and asks the proxy to CONNECT to a checked address (let it tunnel to the storage's ports, 80 and 9000 included, not only 443). Replaces $"+egress.ProxyEnv+"; neither: no proxy, whatever HTTP_PROXY says.", func(v string) (err error) {
		storageProxy, err = egress.ParseProxy(v)
		return err
	})
	var liveAPISources egress.Prefixes
	if err := liveAPISources.Set(os.Getenv(managerpolicy.LiveAPISourcesEnv)); err != nil {
		fmt.Fprintf(os.Stderr, "$%s: %v\n", managerpolicy.LiveAPISourcesEnv, err)
		os.Exit(2)
	}
	flag.Var(&liveAPISources, managerpolicy.LiveAPISourcesFlag, "CIDRs (comma-separated, or the flag repeated) of the control plane, the addresses kube-apiserver connects to the manager's pods from: the manager's NetworkPolicy admits only them to the live API's port. None: any source. Adds to $"+managerpolicy.LiveAPISourcesEnv+".")
	storageEndpoints, err := storagesecrets.ParseClusterEndpoints(os.Getenv(storagesecrets.ClusterEndpointsEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "$%s: %v\n", storagesecrets.ClusterEndpointsEnv, err)
		os.Exit(2)
	}
	flag.Var(&storageEndpoints, storagesecrets.ClusterEndpointsFlag, "Storage endpoints (http(s)://host[:port], comma-separated, or the flag repeated; no wildcards) that every ServiceAccount's token (storage.s3.identity: its STS, over https only, and storage) and every SSE-C key may be sent to, besides those the ServiceAccount or Secret lists in its annotation "+echov1alpha1.StorageEndpointsAnnotation+". Adds to $"+storagesecrets.ClusterEndpointsEnv+".")
	flag.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints; 0 disables them.")
	flag.StringVar(&o.PprofAddr, "pprof-bind-address", "", "Address of the pprof endpoints; empty disables them.")
	flag.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time.")
	flag.StringVar(&o.OperatorNamespace, "operator-namespace", envOr("OPERATOR_NAMESPACE", inClusterNamespace()),
		"The operator's own namespace, which holds the release signing key; defaults to $OPERATOR_NAMESPACE, else the namespace of the pod's service account, else --leader-election-namespace.")
	flag.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to the operator's namespace.")
	flag.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", defaultLeaseDuration, "How long a leader's lease lasts without renewal.")
	flag.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", defaultRenewDeadline, "How long the leader keeps trying to renew before it gives up leadership.")
	flag.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", defaultRetryPeriod, "How often candidates try to acquire or renew leadership.")
	flag.DurationVar(&o.GracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "Time to let reconciles finish on SIGTERM.")
	flag.StringVar(&o.Helm.WatchesFile, "watches-file", envOr("WATCHES_FILE", "watches.yaml"), "Path of the watches file that maps kinds to Helm charts.")
	flag.IntVar(&o.Helm.MaxReleaseHistory, "max-release-history", 3, "Revisions kept per Helm release (0 keeps all).")
	flag.IntVar(&o.Helm.DefaultMaxConcurrentReconciles, "max-concurrent-reconciles", 4, "Workers per Helm reconciler, for watches entries that set none.")
	flag.Float64Var(&qps, "kube-api-qps", 300, "Queries per second to the API server.")
	flag.IntVar(&burst, "kube-api-burst", 600, "Burst of queries to the API server.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	// The live API server and client-go log through klog: into the same log.
	klog.SetLogger(ctrl.Log)

	o.Helm.DefaultEchoImage = envOr("RELATED_IMAGE_ECHO", defaultEchoImage)
	o.MoverImage = envOr("RELATED_IMAGE_OPERATOR", defaultOperatorImage)
	o.MoverEnv = moverEnv()
	o.WatchNamespaces = splitNamespaces(os.Getenv("WATCH_NAMESPACE"))
	o.QPS, o.Burst = float32(qps), burst
	o.LiveAPI.Kubeconfig = kubeconfigFile()
	o.LiveAPISources = liveAPISources
	o.StorageEndpoints = storageEndpoints
	ctrl.Log.WithName("setup").Info("Storage endpoints allowed in every namespace", "endpoints", storageEndpoints.String())
	o.LiveAPI.StorageEgress = egress.New(egress.Config{Allow: storageAllow, ClusterNetworks: clusterNetworks, Proxy: storageProxy})
	ctrl.Log.WithName("setup").Info("Storage egress policy", "allow", storageAllow.String(),
		"clusterNetworks", clusterNetworks.String(), "proxy", redacted(storageProxy))
	if o.OperatorNamespace == "" {
		o.OperatorNamespace = o.LeaderElectionNS
	}
	return o
}

// moverEnv is what the data mover pods get of the operator's environment:
// the cluster's proxy settings, HTTP_PROXY, HTTPS_PROXY and NO_PROXY, which
// OLM sets on the operator's Deployment on a cluster with a proxy, each in
// upper and lower case (operator-lib reads them as every operator does), so
// that backups and restores reach storage through the same proxy. A proxy
// URL's credentials stay behind: a Job's environment is read by whoever may
// read Jobs or pods in the tenant's namespace.
func moverEnv() []corev1.EnvVar {
	vars := olmproxy.ReadProxyVarsFromEnv()
	for i := range vars {
		vars[i].Value = withoutCredentials(vars[i].Value)
	}
	return vars
}

// withoutCredentials drops the user information of a proxy URL, with or
// without a scheme (user:password@host:port); anything else is returned
// as it is.
func withoutCredentials(proxy string) string {
	scheme, rest, hasScheme := strings.Cut(proxy, "://")
	if !hasScheme {
		scheme, rest = "", proxy
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return proxy
	}
	if hasScheme {
		return scheme + "://" + rest[at+1:]
	}
	return rest[at+1:]
}

// goMemoryLimit is the soft memory limit to set from the container's
// memory limit, unless GOMEMLIMIT sets one.
func goMemoryLimit() (int64, bool) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, false
	}
	limit, err := strconv.ParseInt(os.Getenv(memoryLimitEnv), 10, 64)
	if err != nil || limit <= 0 {
		return 0, false
	}
	return int64(float64(limit) * (1 - memoryHeadroom)), true
}

// kubeconfigFile is the kubeconfig the manager was given (--kubeconfig,
// else the first file of $KUBECONFIG), which the live API also reaches
// kube-apiserver with; empty in a pod, where both use the ServiceAccount.
func kubeconfigFile() string {
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return strings.Split(os.Getenv("KUBECONFIG"), string(os.PathListSeparator))[0]
}

// serviceAccountNamespaceFile holds, in a pod, the namespace of its service account.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// inClusterNamespace is the pod's namespace, empty out of cluster.
func inClusterNamespace() string {
	raw, err := os.ReadFile(serviceAccountNamespaceFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

func run(o app.Options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	mgr, err := app.NewManager(cfg, o)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("Starting manager", "version", envOr("OPERATOR_VERSION", version),
		"namespaces", namespacesForLog(o.WatchNamespaces), "watchesFile", o.Helm.WatchesFile, "echoImage", o.Helm.DefaultEchoImage)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// splitNamespaces parses WATCH_NAMESPACE: empty for all namespaces, or a
// comma-separated list.
func splitNamespaces(v string) []string {
	var out []string
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

func namespacesForLog(ns []string) string {
	if len(ns) == 0 {
		return "all"
	}
	return strings.Join(ns, ",")
}

// egressFromEnv reads the egress policy's settings from the environment
// (egress.AllowEnv, egress.ClusterNetworksEnv, egress.ProxyEnv), which the
// flags then add to or replace.
func egressFromEnv(getenv func(string) string) (allow, clusterNetworks egress.Prefixes, proxy *url.URL, err error) {
	if err := allow.Set(getenv(egress.AllowEnv)); err != nil {
		return nil, nil, nil, fmt.Errorf("$%s: %w", egress.AllowEnv, err)
	}
	if err := clusterNetworks.Set(getenv(egress.ClusterNetworksEnv)); err != nil {
		return nil, nil, nil, fmt.Errorf("$%s: %w", egress.ClusterNetworksEnv, err)
	}
	if proxy, err = egress.ParseProxy(getenv(egress.ProxyEnv)); err != nil {
		return nil, nil, nil, fmt.Errorf("$%s: %w", egress.ProxyEnv, err)
	}
	return allow, clusterNetworks, proxy, nil
}

// redacted is u without its password, or "none".
func redacted(u *url.URL) string {
	if u == nil {
		return "none"
	}
	return u.Redacted()
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}
