package liveapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/egress"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// Options configure the server.
type Options struct {
	// BindAddress is host:port of the HTTPS endpoint.
	BindAddress string
	// CertDir holds the serving certificate: tls.crt and tls.key (a
	// kubernetes.io/tls Secret mounted there), or apiserver.crt and
	// apiserver.key (as OLM mounts the certificate of an APIService it
	// manages). The files are reloaded when they change.
	CertDir string
	// ServingCert, when set, serves the certificate instead of CertDir
	// (servingcert.SecretProvider); the server runs it.
	ServingCert dynamiccertificates.CertKeyContentProvider
	// Kubeconfig is the file the server reaches kube-apiserver with for
	// SubjectAccessReviews and the front proxy's CA; empty in a pod,
	// which uses its ServiceAccount.
	Kubeconfig string
	// UserInFlight bounds the requests of one user served at once; 0
	// means DefaultUserInFlight.
	UserInFlight int
	// StorageEgress decides where the listings of EchoBackupLocations
	// may connect; nil: the default policy, which allows only the public
	// internet, with no proxy.
	StorageEgress *egress.Policy
	// StorageEndpoints are the endpoints the operator's administrator
	// allows every SSE-C key to be sent to, besides those its Secret
	// lists; the zero value: none.
	StorageEndpoints storagesecrets.ClusterEndpoints
}

// Sources are what the live resources are read from.
type Sources struct {
	// Cache is the manager's cache, holding the release records.
	Cache client.Reader
	// API reads from the API server what the cache does not hold.
	API client.Reader
	// Verifier checks that the operator wrote a release record.
	Verifier *releasetrust.Signer
}

// Server is the aggregated API server, a manager Runnable that serves on
// every replica: reads need no leader.
type Server struct {
	server   *genericapiserver.GenericAPIServer
	listener net.Listener
}

// shutdownTimeout bounds how long the server waits for in-flight requests
// when the manager stops.
const shutdownTimeout = 5 * time.Second

// The certificate file pairs CertDir may hold, in order of preference.
var certPairs = [][2]string{{"tls.crt", "tls.key"}, {"apiserver.crt", "apiserver.key"}}

// New builds the server and opens its listener.
func New(o Options, src Sources) (*Server, error) {
	config, listener, err := serverConfig(o)
	if err != nil {
		return nil, err
	}
	completed := config.Complete(nil)
	server, err := completed.New("echo-operator-live-api", genericapiserver.NewEmptyDelegate())
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("creating the live API server: %w", err)
	}
	// Reads are short: on shutdown, in-flight requests get a few seconds,
	// not the request timeout (60s), so the manager stops within its own
	// graceful shutdown period.
	server.ShutdownTimeout = shutdownTimeout
	group := genericapiserver.NewDefaultAPIGroupInfo(livev1alpha1.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap[livev1alpha1.GroupVersion.Version] = map[string]rest.Storage{
		livev1alpha1.EchoRevisionResource: &echoRevisions{
			cache:    src.Cache,
			api:      src.API,
			verifier: src.Verifier,
			readOnlyResource: readOnlyResource{resource: echoRevisionsResource,
				access: accessCheck{authz: config.Authorization.Authorizer, resource: "echoes"}},
		},
		livev1alpha1.StoredBackupResource: &storedBackups{
			cache:    src.Cache,
			listings: newLocationListings(src.API, o.StorageEgress, o.StorageEndpoints, defaultListingLimits),
			readOnlyResource: readOnlyResource{resource: storedBackupsResource,
				access: accessCheck{authz: config.Authorization.Authorizer, resource: "echobackups"}},
		},
	}
	if err := server.InstallAPIGroup(&group); err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("installing the live API group: %w", err)
	}
	return &Server{server: server, listener: listener}, nil
}

// serverConfig is the generic API server configuration: HTTPS on
// BindAddress, kube-apiserver's front proxy as the only caller it
// authenticates, authorization delegated to kube-apiserver, a bound on
// each user's requests in flight, OpenAPI v2 and v3 of the live kinds.
func serverConfig(o Options) (*genericapiserver.Config, net.Listener, error) {
	serving := genericoptions.NewSecureServingOptions().WithLoopback()
	serving.ServerCert.CertDirectory, serving.ServerCert.PairName = "", ""
	switch {
	case o.ServingCert != nil:
		// Set on the serving info below.
	case o.CertDir != "":
		certFile, keyFile, err := certFiles(o.CertDir)
		if err != nil {
			return nil, nil, err
		}
		serving.ServerCert.CertKey.CertFile, serving.ServerCert.CertKey.KeyFile = certFile, keyFile
	default:
		if err := serving.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
			return nil, nil, fmt.Errorf("making a self-signed certificate for the live API: %w", err)
		}
	}
	listener, port, err := listen(o.BindAddress)
	if err != nil {
		return nil, nil, err
	}
	serving.Listener, serving.BindPort = listener, port

	config := genericapiserver.NewConfig(Codecs)
	config.EffectiveVersion = utilcompatibility.DefaultBuildEffectiveVersion()
	config.BuildHandlerChainFunc = userBoundedHandlerChain(o.UserInFlight)
	config.EnableProfiling, config.EnableMetrics, config.EnableIndex = false, false, false
	if err := serving.ApplyTo(&config.SecureServing, &config.LoopbackClientConfig); err != nil {
		_ = listener.Close()
		return nil, nil, fmt.Errorf("configuring the live API's serving: %w", err)
	}
	if o.ServingCert != nil {
		config.SecureServing.Cert = o.ServingCert
	}
	namer := openapinamer.NewDefinitionNamer(Scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(livev1alpha1.GetOpenAPIDefinitions, namer)
	config.OpenAPIConfig.Info.Title, config.OpenAPIConfig.Info.Version = "echo-operator live API", livev1alpha1.GroupVersion.Version
	config.OpenAPIConfig.GetDefinitionName = definitionName(namer)
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(livev1alpha1.GetOpenAPIDefinitions, namer)
	config.OpenAPIV3Config.Info.Title, config.OpenAPIV3Config.Info.Version = "echo-operator live API", livev1alpha1.GroupVersion.Version
	config.OpenAPIV3Config.GetDefinitionName = definitionName(namer)

	client, err := authenticationClient(o.Kubeconfig)
	if err == nil {
		err = frontProxyAuthentication(client, &config.Authentication, config.SecureServing)
	}
	if err != nil {
		_ = listener.Close()
		return nil, nil, fmt.Errorf("configuring the live API's authentication: %w", err)
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = o.Kubeconfig
	if err := authz.ApplyTo(&config.Authorization); err != nil {
		_ = listener.Close()
		return nil, nil, fmt.Errorf("configuring the live API's authorization: %w", err)
	}
	return config, listener, nil
}

// userBoundedHandlerChain is the generic server's handler chain around
// the API, which runs once a request is authenticated and authorized, and
// bounds the requests in flight per user (withUserInFlight).
func userBoundedHandlerChain(limit int) func(http.Handler, *genericapiserver.Config) http.Handler {
	if limit <= 0 {
		limit = DefaultUserInFlight
	}
	return func(api http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(withUserInFlight(api, limit), c)
	}
}

// definitionName names the OpenAPI definitions of the live kinds as the
// scheme does (com.github.echo-operator...EchoRevision), with the
// group-version-kind extension kubectl explain looks for. openapi-gen
// keys them by Go import path; the apimachinery types already carry
// their REST names.
func definitionName(namer *openapinamer.DefinitionNamer) func(string) (string, spec.Extensions) {
	return func(name string) (string, spec.Extensions) {
		if strings.Contains(name, "/") {
			name = openapiutil.ToRESTFriendlyName(name)
		}
		return namer.GetDefinitionName(name)
	}
}

// certFiles finds the certificate pair in dir; a directory named and
// empty is an error rather than a silent self-signed certificate.
func certFiles(dir string) (certFile, keyFile string, err error) {
	for _, pair := range certPairs {
		certFile, keyFile = filepath.Join(dir, pair[0]), filepath.Join(dir, pair[1])
		_, certErr := os.Stat(certFile)
		_, keyErr := os.Stat(keyFile)
		if certErr == nil && keyErr == nil {
			return certFile, keyFile, nil
		}
	}
	return "", "", fmt.Errorf("--live-api-cert-dir %s holds neither tls.crt and tls.key nor apiserver.crt and apiserver.key", dir)
}

// listen opens the listener of address (host:port; port 0 picks one).
func listen(address string) (net.Listener, int, error) {
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return nil, 0, fmt.Errorf("listening on %s for the live API: %w", address, err)
	}
	_, port, err := net.SplitHostPort(listener.Addr().String())
	if err == nil {
		var p int
		if p, err = strconv.Atoi(port); err == nil {
			return listener, p, nil
		}
	}
	_ = listener.Close()
	return nil, 0, fmt.Errorf("reading the port of %s: %w", listener.Addr(), err)
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if err := s.server.PrepareRun().RunWithContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serving the live API: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves reads.
func (*Server) NeedLeaderElection() bool { return false }
