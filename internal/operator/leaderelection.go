package operator

import (
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const (
	// leaderElectionID names the Lease the replicas compete for.
	leaderElectionID = "echo-operator.echo.dev"
	// leaderElectionAction is the action of the Events of the leader
	// election, recorded on its Lease.
	leaderElectionAction = "ElectingLeader"
)

// leaderElectionLock is the Lease of the leader election, built as the
// manager would build it but recording its Events with rec: in the
// namespace o.LeaderElectionNS, else the operator's; the holder is
// identified by the hostname (the pod's name) and a random suffix. It is
// nil without leader election.
func leaderElectionLock(cfg *rest.Config, o Options, rec resourcelock.EventRecorder) (resourcelock.Interface, error) {
	if !o.LeaderElect {
		return nil, nil
	}
	namespace := o.LeaderElectionNS
	if namespace == "" {
		namespace = o.OperatorNamespace
	}
	hostname, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reading the hostname for the leader election identity: %w", err)
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	if o.RenewDeadline > 0 {
		// A hung request must not outlast the renewal and lose the lead.
		cfg.Timeout = max(time.Second, o.RenewDeadline/2)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaderElectionID, core, coordination,
		resourcelock.ResourceLockConfig{Identity: hostname + "_" + string(uuid.NewUUID()), EventRecorder: rec})
	if err != nil {
		return nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	return lock, nil
}
