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

// DefaultInstallStatusDelay is how long it holds back the progress of an
// Echo that has no status yet: an install is reported once, when it is
// Ready or has failed, unless it takes longer than this.
const DefaultInstallStatusDelay = time.Minute

// progressReasons are the reasons of a Ready=False condition that say the
// Echo is on its way, not that something is wrong.
var progressReasons = map[string]bool{
	echov1alpha1.EchoReasonReleasePending: true,
	echov1alpha1.EchoReasonRollingOut:     true,
}

// onlyProgress reports whether going from current to desired only
// reports progress: Ready neither becomes nor stops being True, its reason
// stays one of progressReasons (or there was none yet), and the release
// records do not become, or stop being, untrusted. Replica counts,
// addresses and the observed generation change along the way. Such a
// change can wait: a rollout moves a Deployment's status several times
// before the Echo is Ready, and each of those writes costs the API server
// as much as the one that matters.
func onlyProgress(current, desired workloadStatus) bool {
	if current.ready.Status == metav1.ConditionTrue || desired.ready.Status == metav1.ConditionTrue {
		return false
	}
	if !progressReasons[desired.ready.Reason] || (current.ready.Reason != "" && !progressReasons[current.ready.Reason]) {
		return false
	}
	untrusted := func(st workloadStatus) bool { return st.releaseRecords.Status == metav1.ConditionFalse }
	if untrusted(current) || untrusted(desired) {
		return untrusted(current) && untrusted(desired) && current.releaseRecords.Message == desired.releaseRecords.Message
	}
	return true
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
	delay, installDelay time.Duration
	mu                  sync.Mutex
	since               map[types.NamespacedName]time.Time
}

func newStatusPacer(delay, installDelay time.Duration) *statusPacer {
	return &statusPacer{delay: delay, installDelay: installDelay, since: map[types.NamespacedName]time.Time{}}
}

// wait returns how long the progress of key must still wait at now; zero
// when it may be written. An Echo that has no status yet (installing) waits
// for installDelay instead of delay.
func (p *statusPacer) wait(key types.NamespacedName, now time.Time, installing bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, ok := p.since[key]
	if !ok {
		p.since[key], first = now, now
	}
	delay := p.delay
	if installing {
		delay = p.installDelay
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
