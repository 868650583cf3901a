//go:build linux

package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/echo-operator/echo-operator/test/harness/simsuite"
)

const (
	// leaderMetric is client-go's leader election gauge, as
	// controller-runtime serves it: 1 while the process holds the Lease.
	leaderMetric = "leader_election_master_status"
	// reconcileMetric counts the reconciles of every controller.
	reconcileMetric = "controller_runtime_reconcile_total"
	// requestsMetric counts the process's requests to kube-apiserver.
	requestsMetric = "rest_client_requests_total"

	stopTimeout = 45 * time.Second
)

// manager is one replica of the operator: the manager binary run out of
// cluster, from the project's directory, with leader election and the
// product's default lease settings, serving its metrics (plain HTTP) and
// probes on 127.0.0.1.
//
// The Lease's holder identity is controller-runtime's "<hostname>_<uuid>",
// the same host for every replica here, so it does not say which process
// holds the Lease; each process's leader_election_master_status does.
type manager struct {
	name        string
	logPath     string
	metricsAddr string
	probeAddr   string

	proc *simsuite.Manager
}

// startManager starts a replica; it is stopped (SIGTERM) when the test
// ends if it still runs.
func startManager(tb testing.TB, name string) *manager {
	tb.Helper()
	addrs, err := freeAddrs(2)
	if err != nil {
		tb.Fatal(err)
	}
	m := &manager{
		name:        name,
		logPath:     filepath.Join(workDir, name+".log"),
		metricsAddr: addrs[0],
		probeAddr:   addrs[1],
	}
	proc, err := simsuite.StartManager(simsuite.ManagerOptions{
		Binary: managerPath, Dir: repoRoot, Kubeconfig: cluster.KubeconfigPath(), LogPath: m.logPath, Name: "manager " + name,
		Env: []string{"RELATED_IMAGE_ECHO=" + echoImage, "WATCH_NAMESPACE="},
		Args: []string{
			"--leader-elect",
			"--leader-election-namespace=" + operatorNamespace,
			"--metrics-bind-address=" + m.metricsAddr,
			"--metrics-secure=false",
			"--health-probe-bind-address=" + m.probeAddr,
			"--graceful-shutdown-timeout=5s",
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	m.proc = proc
	tb.Cleanup(func() {
		if err := m.stop(); err != nil {
			tb.Errorf("stopping manager %s: %v", name, err)
		}
		if tb.Failed() {
			simsuite.DumpLog(m.logPath, 20000)
		}
	})
	return m
}

func (m *manager) pid() int { return m.proc.Pid() }

// running reports whether the process has not exited.
func (m *manager) running() bool { return m.proc.Running() }

// kill SIGKILLs the process and returns once it is gone.
func (m *manager) kill() { m.proc.Kill() }

// stop sends SIGTERM and waits for the process; nothing if it has exited.
func (m *manager) stop() error {
	defer func() { _ = m.proc.Log.Close() }()
	if !m.running() {
		return nil
	}
	if err := m.proc.Stop(stopTimeout); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// ready reports whether /readyz passes: every informer has synced.
func (m *manager) ready(ctx context.Context) error {
	return get(ctx, "http://"+m.probeAddr+"/readyz", nil)
}

// metrics scrapes the metrics endpoint.
func (m *manager) metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	var mfs map[string]*dto.MetricFamily
	err := get(ctx, "http://"+m.metricsAddr+"/metrics", func(resp *http.Response) error {
		p := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		mfs, err = p.TextToMetricFamilies(resp.Body)
		return err
	})
	return mfs, err
}

// isLeader reports the process's own view: whether it holds the Lease.
func (m *manager) isLeader(ctx context.Context) (bool, error) {
	mfs, err := m.metrics(ctx)
	if err != nil {
		return false, err
	}
	return sum(mfs, leaderMetric, "name", leaseName) == 1, nil
}

// reconciles is the number of reconciles the process has finished, of
// every controller and result.
func (m *manager) reconciles(ctx context.Context) (float64, error) {
	mfs, err := m.metrics(ctx)
	if err != nil {
		return 0, err
	}
	return sum(mfs, reconcileMetric, "", ""), nil
}

// requests is the number of requests the process has sent to
// kube-apiserver.
func (m *manager) requests(ctx context.Context) (float64, error) {
	mfs, err := m.metrics(ctx)
	if err != nil {
		return 0, err
	}
	return sum(mfs, requestsMetric, "", ""), nil
}

// sum adds up the named metric's series, those whose label has the given
// value if label is set.
func sum(mfs map[string]*dto.MetricFamily, name, label, value string) float64 {
	var total float64
	for _, s := range mfs[name].GetMetric() {
		if label != "" && !hasLabel(s, label, value) {
			continue
		}
		switch {
		case s.GetCounter() != nil:
			total += s.GetCounter().GetValue()
		case s.GetGauge() != nil:
			total += s.GetGauge().GetValue()
		}
	}
	return total
}

func hasLabel(s *dto.Metric, name, value string) bool {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// get fetches url and hands a 200 response to read, if set.
func get(ctx context.Context, url string, read func(*http.Response) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if read == nil {
		return nil
	}
	return read(resp)
}

// freeAddrs returns n distinct free 127.0.0.1 addresses. Another process
// may take one before the manager binds it; the window is short.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer func() { _ = l.Close() }()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
