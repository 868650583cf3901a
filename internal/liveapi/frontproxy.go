package liveapi

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The ConfigMap kube-apiserver publishes the front proxy's CA and request
// headers in, and its keys that frontProxyAuthentication reads. Its
// client-ca-file, the CA of the cluster's own client certificates, is
// deliberately not read.
const (
	authenticationConfigMapNamespace = "kube-system"
	authenticationConfigMapName      = "extension-apiserver-authentication"
	frontProxyCAKey                  = "requestheader-client-ca-file"
)

// frontProxy keeps the front proxy's CA and request header names from the
// ConfigMap as it changes. The secure server runs it, as the CA it
// requests client certificates of.
type frontProxy struct {
	*dynamiccertificates.ConfigMapCAController
	*headerrequest.RequestHeaderAuthRequestController
}

var _ dynamiccertificates.ControllerRunner = &frontProxy{}

func newFrontProxy(client kubernetes.Interface) (*frontProxy, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("front-proxy-ca",
		authenticationConfigMapNamespace, authenticationConfigMapName, frontProxyCAKey, client)
	if err != nil {
		return nil, fmt.Errorf("watching the front proxy's CA: %w", err)
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(authenticationConfigMapName, authenticationConfigMapNamespace, client,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	return &frontProxy{ConfigMapCAController: ca, RequestHeaderAuthRequestController: headers}, nil
}

// RunOnce reads the ConfigMap once.
func (f *frontProxy) RunOnce(ctx context.Context) error {
	return errors.NewAggregate([]error{f.ConfigMapCAController.RunOnce(ctx), f.RequestHeaderAuthRequestController.RunOnce(ctx)})
}

// Run follows the ConfigMap until ctx ends.
func (f *frontProxy) Run(ctx context.Context, workers int) {
	go f.ConfigMapCAController.Run(ctx, workers)
	go f.RequestHeaderAuthRequestController.Run(ctx, workers)
	<-ctx.Done()
}

// requestHeaderConfig is the request header authentication of the front
// proxy f: a client certificate f's CA signed, of one of the allowed
// names, with the user in the headers f names.
func (f *frontProxy) requestHeaderConfig() *authenticatorfactory.RequestHeaderConfig {
	return &authenticatorfactory.RequestHeaderConfig{
		CAContentProvider:   f,
		UsernameHeaders:     headerrequest.StringSliceProviderFunc(f.UsernameHeaders),
		UIDHeaders:          headerrequest.StringSliceProviderFunc(f.UIDHeaders),
		GroupHeaders:        headerrequest.StringSliceProviderFunc(f.GroupHeaders),
		ExtraHeaderPrefixes: headerrequest.StringSliceProviderFunc(f.ExtraHeaderPrefixes),
		AllowedClientNames:  headerrequest.StringSliceProviderFunc(f.AllowedClientNames),
	}
}

// frontProxyAuthentication makes kube-apiserver's front proxy the only
// caller the live API authenticates: a request must come with the proxy's
// client certificate and carries its user in the proxy's headers. There is
// no bearer token authentication (no TokenReview is ever sent), no client
// certificate of the cluster's client CA, and no anonymous user: anything
// else is 401 Unauthorized. So every request has gone through
// kube-apiserver's authentication, priority and fairness and audit, and a
// pod that reaches the manager's port directly gets nothing. (The generic
// server adds the token of its own loopback client, random, made at start
// and never out of the process.)
func frontProxyAuthentication(client kubernetes.Interface, info *genericapiserver.AuthenticationInfo, serving *genericapiserver.SecureServingInfo) error {
	f, err := newFrontProxy(client)
	if err != nil {
		return err
	}
	if err := f.RunOnce(context.Background()); err != nil {
		return fmt.Errorf("reading the front proxy's CA and headers from ConfigMap %s/%s (kube-apiserver publishes them when its aggregation layer is configured): %w",
			authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	config := f.requestHeaderConfig()
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{RequestHeaderConfig: config}.New()
	if err != nil {
		return fmt.Errorf("building the front proxy's authenticator: %w", err)
	}
	info.Authenticator, info.RequestHeaderConfig = authn, config
	if err := info.ApplyClientCert(f, serving); err != nil {
		return fmt.Errorf("requesting the front proxy's client certificate: %w", err)
	}
	return nil
}

// authenticationClient reaches kube-apiserver with kubeconfig, or in a
// pod with its ServiceAccount, for the ConfigMap.
func authenticationClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("configuring the live API's client of kube-apiserver: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}
