package moverrunner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// moverComponent is the app.kubernetes.io/component of the mover Jobs'
// pods (controllers/datamover_job.go).
const moverComponent = "data-mover"

// parallelMovers bounds the movers a Watch runs at once.
const parallelMovers = 4

// Run is one mover run of a Watch: the pod, and what its mover came to or
// why it could not run or be reported (ErrPodGone when the pod was deleted
// before its result could be written).
type Run struct {
	Pod    types.NamespacedName
	Result Result
	Err    error
}

// MoverSelector selects the pods of the operator's data mover Jobs.
func MoverSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{
		chart.ComponentLabel: moverComponent,
		chart.ManagedByLabel: v1alpha1.ManagedBy,
	})
}

// Watch starts handling, in the background until ctx ends, every mover pod
// that KWOK has completed in a namespace inScope accepts: the mover runs
// once with the pod's arguments and its result is reported on the pod.
// A pod that already shows a result is never run, nor is a pod run twice
// by one Watch. done, when not nil, receives every run. Watch returns once
// its view of the pods is synced.
func (r *Runner) Watch(ctx context.Context, clientset kubernetes.Interface, inScope func(namespace string) bool, done func(Run)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = MoverSelector().String() }))
	informer := factory.Core().V1().Pods().Informer()
	w := &watcher{runner: r, ctx: ctx, inScope: inScope, done: done, claimed: map[types.UID]bool{}, slots: make(chan struct{}, parallelMovers)}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.consider,
		UpdateFunc: func(_, obj any) { w.consider(obj) },
	}); err != nil {
		return fmt.Errorf("watching the mover pods: %w", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return errors.New("the mover pods' informer did not sync")
	}
	return nil
}

type watcher struct {
	runner  *Runner
	ctx     context.Context
	inScope func(string) bool
	done    func(Run)
	slots   chan struct{}

	mu      sync.Mutex
	claimed map[types.UID]bool
}

// consider starts the mover of a pod KWOK completed, unless the pod was
// handled already.
func (w *watcher) consider(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Status.Phase != corev1.PodSucceeded || hasResult(pod) || !w.inScope(pod.Namespace) {
		return
	}
	w.mu.Lock()
	if w.claimed[pod.UID] {
		w.mu.Unlock()
		return
	}
	w.claimed[pod.UID] = true
	w.mu.Unlock()
	go w.handle(pod.DeepCopy())
}

// handle runs the pod's mover and reports its result, retrying the report
// until it lands or the pod is gone.
func (w *watcher) handle(pod *corev1.Pod) {
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		return
	}
	defer func() { <-w.slots }()
	run := Run{Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}}
	run.Result, run.Err = w.runner.Run(w.ctx, pod.Namespace, &pod.Spec)
	if run.Err == nil {
		run.Err = w.report(run)
	}
	if w.done != nil && w.ctx.Err() == nil {
		w.done(run)
	}
}

// ErrPodGone is the report of a run whose pod was deleted (with its Job)
// before the result could be written: as for a kubelet, there is no one
// left to tell.
var ErrPodGone = errors.New("the pod was deleted before its result was reported")

func (w *watcher) report(run Run) error {
	var last error
	err := wait.PollUntilContextTimeout(w.ctx, reportPollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = w.runner.Report(ctx, run.Pod, run.Result)
		if apierrors.IsNotFound(last) {
			last = fmt.Errorf("%w: %w", ErrPodGone, last)
			return true, last
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
