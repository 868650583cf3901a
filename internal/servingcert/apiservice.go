package servingcert

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The live API's registration needs these rights, cluster-wide since an
// APIService is cluster-scoped: creating its APIService (create cannot be
// limited to a name), reading, repointing, and deleting that one alone;
// and reading the ConfigMap kube-apiserver publishes in kube-system, with
// the CAs that authenticate its requests to an aggregated API server,
// which no other ConfigMap is named. `make manifests` writes them into the
// ClusterRole live-api-role (config/rbac/liveapi/role.yaml).
//
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=create
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,resourceNames=v1alpha1.live.echo.dev,verbs=get;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=extension-apiserver-authentication,verbs=get;list;watch

// The APIService's priorities among the groups and versions kube-apiserver
// serves: those of a group no built-in one shadows.
const (
	groupPriorityMinimum = 1000
	versionPriority      = 15
	// servicePort is the Service's port kube-apiserver calls.
	servicePort = 443
	// managedByLabel marks an APIService the operator registered itself.
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "echo-operator"
)

// EmptyAPIService is an APIService with its kind and nothing else, to read
// one into. The operator's RBAC lets it read the live API's APIService by
// name only, not list or watch APIServices: the manager's client must
// not cache them (see the manager's client options), and reads go to the
// API server.
func EmptyAPIService() *unstructured.Unstructured {
	apiService := &unstructured.Unstructured{}
	apiService.SetAPIVersion("apiregistration.k8s.io/v1")
	apiService.SetKind("APIService")
	return apiService
}

// NewAPIService is the APIService name (<version>.<group>) pointing at the
// Service namespace/service, without a caBundle.
func NewAPIService(name, namespace, service string) (*unstructured.Unstructured, error) {
	version, group, ok := strings.Cut(name, ".")
	if !ok || version == "" || group == "" {
		return nil, fmt.Errorf("APIService name %q is not <version>.<group>", name)
	}
	apiService := EmptyAPIService()
	apiService.Object["spec"] = map[string]any{
		"group":                group,
		"version":              version,
		"groupPriorityMinimum": int64(groupPriorityMinimum),
		"versionPriority":      int64(versionPriority),
		"service":              serviceRef(namespace, service),
	}
	apiService.SetName(name)
	apiService.SetLabels(map[string]string{"app.kubernetes.io/name": "echo-operator", managedByLabel: managedBy})
	return apiService, nil
}

func serviceRef(namespace, service string) map[string]any {
	return map[string]any{"namespace": namespace, "name": service, "port": int64(servicePort)}
}

// Unregister deletes the APIService name when it points at the Service
// namespace/service: the operator no longer serves the live API there.
// One that points elsewhere (another install's) is left alone. It returns
// whether it deleted it.
func Unregister(ctx context.Context, c client.Client, name, namespace, service string) (bool, error) {
	apiService := EmptyAPIService()
	if err := c.Get(ctx, client.ObjectKey{Name: name}, apiService); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading APIService %s: %w", name, err)
	}
	ns, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "namespace")
	svc, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name")
	if ns != namespace || svc != service {
		return false, nil
	}
	// Only the copy read: a concurrent repointing fails the delete.
	err := c.Delete(ctx, apiService, client.Preconditions{UID: ptrTo(apiService.GetUID()), ResourceVersion: ptrTo(apiService.GetResourceVersion())})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting APIService %s: %w", name, err)
	}
	return err == nil, nil
}

func ptrTo[T any](v T) *T { return &v }

// Unregisterer removes, on the leader, the live API's APIService when the
// operator starts with the live API off: kube-apiserver would otherwise
// keep sending the group's requests to a Service nothing serves, and
// discovery failing for the group keeps namespaces from being deleted.
type Unregisterer struct {
	Client client.Client
	// APIService, Namespace and Service: the APIService and the Service of
	// the operator's namespace it points at when the operator registered it.
	APIService, Namespace, Service string
	Log                            logr.Logger
}

// NeedLeaderElection is true: one replica writes.
func (*Unregisterer) NeedLeaderElection() bool { return true }

// Start unregisters the APIService, retrying until it succeeds or ctx ends.
func (u *Unregisterer) Start(ctx context.Context) error {
	retry := minRetry
	for {
		deleted, err := Unregister(ctx, u.Client, u.APIService, u.Namespace, u.Service)
		if err == nil {
			if deleted {
				u.Log.Info("Unregistered the live API's APIService: the live API is off", "apiService", u.APIService)
			}
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		u.Log.Error(err, "Cannot unregister the live API's APIService; retrying", "apiService", u.APIService, "retryAfter", retry)
		timer := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		retry = min(2*retry, maxRetry)
	}
}
