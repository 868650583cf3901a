//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// results is the JSON results file.
type results struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Args are the command-line arguments of go run ./test/bench.
	Args     []string     `json:"args"`
	Machine  machineInfo  `json:"machine"`
	Versions versionInfo  `json:"versions"`
	Settings settings     `json:"settings"`
	Runs     []*runResult `json:"runs"`
	// Sources are the results files a merged file (-merge) was made
	// from; Machine and Versions are then the first one's.
	Sources []*source `json:"sources,omitempty"`
}

// source is one results file of a merged file.
type source struct {
	File     string      `json:"file"`
	Args     []string    `json:"args"`
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished,omitzero"`
	Machine  machineInfo `json:"machine"`
	Versions versionInfo `json:"versions"`
	Settings settings    `json:"settings"`
	// Runs are the runs kept from the file: a later file's run of the
	// same system and N replaces its own.
	Runs []runKey `json:"runs"`
}

// runKey names a run.
type runKey struct {
	System string `json:"system"`
	N      int    `json:"n"`
}

// settings are the parameters every run shares. In a merged file, N and
// Systems cover all the sources, and a field on which the sources of the
// runs disagree is zero: each source's own settings are in Sources.
type settings struct {
	N                  []int    `json:"n"`
	Systems            []string `json:"systems"`
	BaselineSeconds    float64  `json:"baselineSeconds"`
	IdleSeconds        float64  `json:"idleSeconds"`
	SettleSeconds      float64  `json:"settleSeconds"`
	PhaseTimeout       float64  `json:"phaseTimeoutSeconds"`
	Startup            bool     `json:"startup"`
	Workers            int      `json:"clientWorkers"`
	ClientQPS          float64  `json:"clientQPS"`
	ClientBurst        int      `json:"clientBurst"`
	ControllerQPS      float64  `json:"controllerManagerQPS"`
	ControllerBurst    int      `json:"controllerManagerBurst"`
	EchoImage          string   `json:"echoImage"`
	EchoReplicas       int      `json:"echoReplicas"`
	StockWorkers       int      `json:"stockMaxConcurrentReconciles"`
	StockReconcileTime string   `json:"stockReconcilePeriod"`
}

// runResult is everything measured for one system at one N.
type runResult struct {
	System  string    `json:"system"`
	N       int       `json:"n"`
	Nodes   int       `json:"nodes"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Error is why the run stopped early; TimedOutPhase names the phase
	// whose time limit passed, if that was the reason.
	Error         string `json:"error,omitempty"`
	TimedOutPhase string `json:"timedOutPhase,omitempty"`
	// LogDir holds the cluster's and the operator's logs when kept.
	LogDir string `json:"logDir,omitempty"`
	// Source is the File of the run's source in a merged file.
	Source string `json:"source,omitempty"`

	Baseline *baselineResult `json:"baseline,omitempty"`
	// OperatorReadySeconds is the time from starting the operator to its
	// first ready answer.
	OperatorReadySeconds float64 `json:"operatorReadySeconds,omitempty"`

	// Rollout: create → Deployment Available; EchoReady: create → Echo
	// Ready=True (echo only).
	Rollout         *convergence   `json:"rollout,omitempty"`
	EchoReady       *convergence   `json:"echoReady,omitempty"`
	RolloutRequests *requestWindow `json:"rolloutRequests,omitempty"`

	Idle *idleResult `json:"idle,omitempty"`

	// Update: patch → Deployment rolled out with the new message.
	Update          *convergence   `json:"update,omitempty"`
	UpdateEchoReady *convergence   `json:"updateEchoReady,omitempty"`
	UpdateRequests  *requestWindow `json:"updateRequests,omitempty"`

	Process *processResult `json:"process,omitempty"`
	Startup *startupResult `json:"startup,omitempty"`
	// Upgrades are echo-operator's upgrades on the converged Echos.
	Upgrades []*upgradeResult `json:"upgrades,omitempty"`
}

// baselineResult is the cluster's own traffic before any operator runs.
type baselineResult struct {
	Seconds   float64 `json:"seconds"`
	PerMinute float64 `json:"requestsPerMinute"`
	// Rows are per minute.
	Rows []requestRow `json:"rows"`
}

// requestWindow is the API traffic of a window of time.
type requestWindow struct {
	Seconds float64 `json:"seconds"`
	// Total counts kube-apiserver's requests in the window, Baseline what
	// the baseline rate predicts for it, Net the difference.
	Total     float64 `json:"total"`
	Baseline  float64 `json:"baseline"`
	Net       float64 `json:"net"`
	NetWrites float64 `json:"netWrites"`
	// Client counts the requests the actor itself sent, by HTTP method:
	// the operator's client-go counter, or the floor's own client.
	Client      map[string]float64 `json:"client,omitempty"`
	ClientTotal float64            `json:"clientTotal"`
	// ClientKinds are the operator's requests by kind, when it counts
	// them (echo-operator's echo_operator_kube_api_requests_total).
	ClientKinds []requestRow `json:"clientKinds,omitempty"`
	// Top lists the kinds of requests with the largest net counts.
	Top []requestRow `json:"top"`

	// raw and base are the counts by kind and their baseline.
	raw, base requestCounts
}

// sent is the number of requests the actor sent to the API server: its
// own count by kind when it keeps one (echo-operator's excludes the reads
// its cache answers, which client-go counts), else client-go's.
func (w *requestWindow) sent() float64 {
	if len(w.ClientKinds) == 0 {
		return w.ClientTotal
	}
	var total float64
	for _, row := range w.ClientKinds {
		total += row.Net
	}
	return total
}

// idleResult is the traffic once everything has converged.
type idleResult struct {
	// Minutes are the requests per minute of each minute; NetMinutes the
	// same less the baseline rate.
	Minutes           []float64 `json:"requestsPerMinute"`
	NetMinutes        []float64 `json:"netRequestsPerMinute"`
	Mean              float64   `json:"meanPerMinute"`
	NetMean           float64   `json:"netMeanPerMinute"`
	BaselinePerMinute float64   `json:"baselinePerMinute"`
	// ClientPerMinute is the actor's own requests per minute.
	ClientPerMinute float64 `json:"clientPerMinute"`
	// Rows are per minute over the whole window.
	Rows []requestRow `json:"rows"`
}

// processResult is the operator process's usage per phase.
type processResult struct {
	PID     int   `json:"pid"`
	Rollout usage `json:"rollout"`
	Idle    usage `json:"idle"`
	Update  usage `json:"update"`
	// Total covers the process's whole life; its HWMBytes is the peak RSS.
	Total usage `json:"total"`
}

// startupResult is echo-operator restarted on N converged Echos.
type startupResult struct {
	// ReadySeconds and ReconciledSeconds run from the process start to its
	// first ready answer and to N reconciles of the Echo controller.
	ReadySeconds      float64 `json:"readySeconds"`
	ReconciledSeconds float64 `json:"reconciledSeconds"`
	Reconciles        float64 `json:"reconciles"`
	TimedOut          bool    `json:"timedOut,omitempty"`
	// Releases is the number of release Secrets; ReleaseChanges lists
	// those added, removed or changed over the restart.
	Releases          int      `json:"releases"`
	ReleasesUnchanged bool     `json:"releasesUnchanged"`
	ReleaseChanges    []string `json:"releaseChanges,omitempty"`
	// The window runs from the start to N reconciles plus a grace period.
	processWindow
}

// processWindow is what the new manager process did from its start to the
// end of a measurement (WindowSeconds later): the requests it made, its
// writes to Secrets and Deployments net of baseline, and what it used.
type processWindow struct {
	WindowSeconds    float64        `json:"windowSeconds"`
	SecretWrites     float64        `json:"secretWrites"`
	DeploymentWrites float64        `json:"deploymentWrites"`
	Requests         *requestWindow `json:"requests"`
	Process          usage          `json:"process"`
}

// upgradeResult is echo-operator replaced by a new version on N converged
// Echos, with the same chart or a changed one.
type upgradeResult struct {
	Name string `json:"name"`
	// Releases is the number of release records before the upgrade.
	Releases int `json:"releases"`
	// ReadySeconds and DoneSeconds run from the new process's start to
	// its first ready answer, and to every release converged on the new
	// chart (relabelled, or upgraded) with no Deployment rolling.
	ReadySeconds float64 `json:"readySeconds"`
	DoneSeconds  float64 `json:"doneSeconds"`
	Converged    int     `json:"converged"`
	TimedOut     bool    `json:"timedOut,omitempty"`
	// RevisionsWritten counts the release records added (new revisions),
	// RecordsRewritten those of an existing revision written again.
	RevisionsWritten int `json:"revisionsWritten"`
	RecordsRewritten int `json:"recordsRewritten"`
	// Rollouts counts the Deployments that rolled out a new generation,
	// PeakRollouts the most of them rolling at once.
	Rollouts     int `json:"rollouts"`
	PeakRollouts int `json:"peakRollouts"`
	// The window runs from the start to DoneSeconds plus a grace period.
	processWindow
}

// readResults reads a results file.
func readResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the results: %w", err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding the results %s: %w", path, err)
	}
	return &r, nil
}

// writeJSON writes the results file, creating its directory.
func (r *results) writeJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the results directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the results: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}
