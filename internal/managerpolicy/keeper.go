package managerpolicy

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of the NetworkPolicy's server-side
// applies.
const FieldOwner = "echo-operator-network-policy"

// The Keeper's pace: it applies again every reapply, so that an edit or a
// deletion of the policy is undone, and retries a failure after retry.
const (
	reapply = 10 * time.Minute
	retry   = 30 * time.Second
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=create
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,resourceNames=echo-operator-controller-manager,verbs=get;patch

// Keeper applies the manager's NetworkPolicy, on the leader, while the
// manager runs. It is level-based: each apply states the whole policy,
// built from the manager's Deployment as it is, and an apply that changes
// nothing writes nothing.
type Keeper struct {
	// Client applies the policy; Reader reads the Deployment from the API
	// server (the cache may not hold the operator's own namespace).
	Client client.Client
	Reader client.Reader
	// Namespace and Deployment name the manager's Deployment.
	Namespace, Deployment string
	// LiveAPISources are the control plane's addresses, the only sources
	// of the live API's port; none: any source.
	LiveAPISources []netip.Prefix
	Log            logr.Logger
}

// NeedLeaderElection is true: one replica writes.
func (*Keeper) NeedLeaderElection() bool { return true }

// Start applies the policy, then again every reapply, until ctx ends; a
// failure is logged and retried sooner.
func (k *Keeper) Start(ctx context.Context) error {
	for {
		wait := reapply
		if err := k.Apply(ctx); err != nil {
			k.Log.Error(err, "Cannot apply the manager's NetworkPolicy; retrying", "networkPolicy", k.Namespace+"/"+Name, "retryAfter", retry)
			wait = retry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Apply applies the policy of the Deployment as it is now.
func (k *Keeper) Apply(ctx context.Context) error {
	dep := &appsv1.Deployment{}
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Deployment}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the manager's Deployment %s/%s does not exist (--manager-deployment names it): %w", k.Namespace, k.Deployment, err)
		}
		return fmt.Errorf("reading the manager's Deployment: %w", err)
	}
	if err := k.Client.Patch(ctx, Build(dep, k.LiveAPISources), client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying NetworkPolicy %s/%s: %w", k.Namespace, Name, err)
	}
	return nil
}
