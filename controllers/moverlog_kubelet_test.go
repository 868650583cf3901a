package controllers_test

import (
	"context"
	"io"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/echo-operator/echo-operator/controllers"
)

// podLogs is the manager's reader of pod logs in these tests. The API
// server serves a pod's log from the kubelet of its node, and no kubelet
// runs here: a test plays the kubelet for the pods it names (serve), and
// every other read goes to the API server (api), which answers as it does
// for a pod that has no node.
var podLogs = &kubeletLogs{logs: map[string]string{}, reads: map[string]int{}}

// kubeletLogs serves the logs tests set, counts the reads of every pod, and
// passes the others on to the API server.
type kubeletLogs struct {
	api   controllers.PodLogReader
	mu    sync.Mutex
	logs  map[string]string // by namespace/pod
	reads map[string]int
}

// serve makes the log of pod text.
func (k *kubeletLogs) serve(namespace, pod, text string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[namespace+"/"+pod] = text
}

// readsOf is how often the log of pod was read.
func (k *kubeletLogs) readsOf(namespace, pod string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reads[namespace+"/"+pod]
}

func (k *kubeletLogs) PodLog(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	k.mu.Lock()
	k.reads[namespace+"/"+pod]++
	text, ok := k.logs[namespace+"/"+pod]
	k.mu.Unlock()
	if !ok {
		return k.api.PodLog(ctx, namespace, pod, opts)
	}
	return io.NopCloser(strings.NewReader(text)), nil
}
