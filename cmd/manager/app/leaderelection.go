package app

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
)

const (
	// leaderElectionID names the Lease the replicas compete for.
	leaderElectionID = "echo-operator.echo.dev"
	// leaderElectionAction is the action of the Events of the leader
	// election, recorded on its Lease.
	leaderElectionAction = "ElectingLeader"
)

// leaderElectionLock is the Lease of the leader election, built by
// controller-runtime as the manager would build it, but recording its
// Events with rec: in the namespace o.LeaderElectionNS, else the
// operator's. It is nil without leader election.
func leaderElectionLock(cfg *rest.Config, o Options, rec record.EventRecorder) (resourcelock.Interface, error) {
	namespace := o.LeaderElectionNS
	if namespace == "" {
		namespace = o.OperatorNamespace
	}
	// NewResourceLock sets the user agent and timeout on the config it gets.
	return leaderelection.NewResourceLock(rest.CopyConfig(cfg), recorderFor(func(string) record.EventRecorder { return rec }),
		leaderelection.Options{
			LeaderElection:          o.LeaderElect,
			LeaderElectionID:        leaderElectionID,
			LeaderElectionNamespace: namespace,
			RenewDeadline:           o.RenewDeadline,
		})
}

// recorderFor is a recorder.Provider of a function.
type recorderFor func(name string) record.EventRecorder

func (f recorderFor) GetEventRecorderFor(name string) record.EventRecorder { return f(name) }
