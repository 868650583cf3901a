package v1alpha1

import "cmp"

// An Echo's replica rules live here: the chart renders the counts
// DesiredReplicas gives (through the chart values), and the status
// controller waits for them. The CRD's default of spec.replicas and its
// CEL rule on high availability (echo_types.go) say the same:
// echo_replicas_test.go checks that the rule refuses exactly the specs
// DesiredReplicas would have to raise, and the defaults; the chart's
// default values are checked in internal/chart (replicas_test.go).
const (
	// DefaultReplicas is spec.replicas when unset.
	DefaultReplicas int32 = 1
	// HighAvailabilityReplicas is the fewest replicas high availability
	// runs.
	HighAvailabilityReplicas int32 = 3
	// DefaultMinReplicas and DefaultMaxReplicas bound an autoscaler that
	// sets no bound.
	DefaultMinReplicas int32 = 1
	DefaultMaxReplicas int32 = 5
)

// ReplicaCounts are the replicas an Echo runs: computed, never stored.
// +kubebuilder:object:generate=false
type ReplicaCounts struct {
	// Autoscaled: an autoscaler sets the count, within MinReplicas and
	// MaxReplicas; else the Deployment runs Replicas.
	Autoscaled                         bool
	Replicas, MinReplicas, MaxReplicas int32
}

// DesiredReplicas is spec.replicas, or the autoscaler's bounds, with their
// defaults; with high availability, the count in use is raised to
// HighAvailabilityReplicas. The maximum is never below the minimum.
func (s *EchoSpec) DesiredReplicas() ReplicaCounts {
	c := ReplicaCounts{Replicas: DefaultReplicas, MinReplicas: DefaultMinReplicas, MaxReplicas: DefaultMaxReplicas}
	if s.Replicas != nil {
		c.Replicas = *s.Replicas
	}
	if as := s.Autoscaling; as != nil {
		c.Autoscaled = as.Enabled
		c.MinReplicas, c.MaxReplicas = cmp.Or(as.MinReplicas, DefaultMinReplicas), cmp.Or(as.MaxReplicas, DefaultMaxReplicas)
	}
	if ha := s.HighAvailability; ha != nil && ha.Enabled {
		if c.Autoscaled {
			c.MinReplicas = max(c.MinReplicas, HighAvailabilityReplicas)
		} else {
			c.Replicas = max(c.Replicas, HighAvailabilityReplicas)
		}
	}
	c.MaxReplicas = max(c.MaxReplicas, c.MinReplicas)
	return c
}
