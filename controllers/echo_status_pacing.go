package controllers

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// DefaultProgressStatusDelay is how long the Echo controller holds back a
// status change that only reports progress (see onlyProgress).
const DefaultProgressStatusDelay = 10 * time.Second

// DefaultRolloutStatusDelay is how long it holds back the progress of a
// change on its way: an Echo being installed (it has no status yet), or a
// Ready Echo rolling out a new generation of its spec. Such a change is
// reported once, when it is Ready or has failed, unless it takes longer
// than this. Until then, the status still describes the generation in its
// observedGeneration, which `kubectl wait` and kstatus compare with the
// Echo's generation.
const DefaultRolloutStatusDelay = time.Minute

// progressReasons are the reasons of a Ready=False condition that say the
// Echo is on its way, not that something is wrong.
var progressReasons = map[string]bool{
	echov1alpha1.EchoReasonReleasePending: true,
	echov1alpha1.EchoReasonRollingOut:     true,
}

// onlyProgress reports whether going from current to desired only
// reports progress: Ready does not become True, its reason is one of
// progressReasons, and before it was one of them too, or there was none
// yet, or Ready was True for an earlier generation (the new one is on its
// way); and the release records do not become, or stop being, untrusted.
// Replica counts, addresses, the release's fields and the observed
// generation change along the way. Such a change can wait: a rollout moves
// a Deployment's status several times before the Echo is Ready, and each
// of those writes costs the API server as much as the one that matters.
func onlyProgress(current, desired workloadStatus) bool {
	if desired.ready.Status == metav1.ConditionTrue || !progressReasons[desired.ready.Reason] {
		return false
	}
	switch {
	case current.ready.Status == metav1.ConditionTrue:
		if !newGeneration(current.ready, desired.ready) {
			return false
		}
	case current.ready.Reason != "" && !progressReasons[current.ready.Reason]:
		return false
	}
	untrusted := func(st workloadStatus) bool { return st.releaseRecords.Status == metav1.ConditionFalse }
	if untrusted(current) || untrusted(desired) {
		return untrusted(current) && untrusted(desired) && current.releaseRecords.Message == desired.releaseRecords.Message
	}
	return true
}

// newGeneration says whether desired describes a later generation of the
// Echo's spec than current.
func newGeneration(current, desired metav1.Condition) bool {
	return desired.ObservedGeneration > current.ObservedGeneration
}

// changeOnItsWay says whether progress from current is that of an install
// (no status yet) or of a new generation of a Ready Echo: what
// DefaultRolloutStatusDelay holds back.
func changeOnItsWay(current workloadStatus) bool {
	return current.ready.Type == "" || current.ready.Status == metav1.ConditionTrue
}

// nothingRendered says whether none of the objects readiness reads exists
// yet: the release is not installed, or is being installed. A progress
// write then would only say "pending", a write per install that the
// status written once the Deployment exists makes moot.
func nothingRendered(w echoWorld) bool {
	return w.deployment == nil && w.service == nil && w.ingress == nil
}

// statusPacer holds back the status writes that only report progress, per
// Echo, for at most a delay from the first one held: whatever changes in
// between goes out in one write, and a change that matters (Ready, a
// failure) goes out at once with it. What it remembers is a timer, not
// state: a restarted operator writes what is pending at once.
type statusPacer struct {
	delay, rolloutDelay time.Duration
	mu                  sync.Mutex
	since               map[types.NamespacedName]time.Time
}

func newStatusPacer(delay, rolloutDelay time.Duration) *statusPacer {
	return &statusPacer{delay: delay, rolloutDelay: rolloutDelay, since: map[types.NamespacedName]time.Time{}}
}

// wait returns how long the progress of key must still wait at now; zero
// when it may be written. A change on its way (changeOnItsWay) waits for
// rolloutDelay instead of delay.
func (p *statusPacer) wait(key types.NamespacedName, now time.Time, changing bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, ok := p.since[key]
	if !ok {
		p.since[key], first = now, now
	}
	delay := p.delay
	if changing {
		delay = p.rolloutDelay
	}
	return max(first.Add(delay).Sub(now), 0)
}

// forget drops what is held for key: its status was written, needs no
// write, or the Echo is gone.
func (p *statusPacer) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.since, key)
}
