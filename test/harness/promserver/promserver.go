package promserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/freeport"

	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/toolbin"
)

// EnvBinary names the environment variable holding Prometheus' path.
const EnvBinary = "PROMETHEUS"

const startTimeout = time.Minute

// Server is a running Prometheus.
type Server struct {
	// URL is the base URL of its HTTP API.
	URL     string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// Start runs Prometheus with config (prometheus.yml's content; rule_files
// are relative to dir) in dir, and stops it when the test ends. Without
// PROMETHEUS it skips the test, or fails it under CI.
func Start(tb testing.TB, dir, config string) *Server {
	tb.Helper()
	bin := toolbin.Path(tb, EnvBinary, "Prometheus")
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		tb.Fatal(err)
	}
	port, err := freeport.Port()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{
		URL:     "http://127.0.0.1:" + strconv.Itoa(port),
		logPath: filepath.Join(dir, "prometheus.log"),
		done:    make(chan struct{}),
	}
	log, err := os.Create(s.logPath)
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd = exec.Command(bin,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
		"--log.level=warn",
	)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		_ = log.Close()
		tb.Fatalf("starting Prometheus: %v", err)
	}
	go func() {
		_ = s.cmd.Wait()
		_ = log.Close()
		close(s.done)
	}()
	tb.Cleanup(s.stop)
	if err := s.waitReady(); err != nil {
		tb.Fatalf("Prometheus did not become ready: %v\n%s", err, s.LogTail())
	}
	return s
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		select {
		case <-s.done:
			return errors.New("the Prometheus process exited")
		default:
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail returns the end of Prometheus' log.
func (s *Server) LogTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-8000):])
}

// Sample is one series of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query at the current time.
func (s *Server) Query(query string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := s.get("/api/v1/query?query="+url.QueryEscape(query), &data); err != nil {
		return nil, err
	}
	samples := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		str, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", query, r.Value[1], err)
		}
		samples = append(samples, Sample{Labels: r.Metric, Value: v})
	}
	return samples, nil
}

// Alert is an alert Prometheus holds, pending or firing.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// Alerts returns the alerts that are pending or firing.
func (s *Server) Alerts() ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := s.get("/api/v1/alerts", &data); err != nil {
		return nil, err
	}
	return data.Alerts, nil
}

// get reads an API endpoint's data into out.
func (s *Server) get(path string, out any) error {
	resp, err := http.Get(s.URL + path)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	var envelope struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(buf.Bytes(), &envelope); err != nil {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, buf.String())
	}
	if envelope.Status != "success" {
		return fmt.Errorf("GET %s: %s", path, envelope.Error)
	}
	return json.Unmarshal(envelope.Data, out)
}

// RuleFile turns a PrometheusRule manifest (the Prometheus Operator's
// kind) into a Prometheus rule file holding its rule groups, as the
// Prometheus Operator hands them to the Prometheus it runs.
func RuleFile(prometheusRule []byte) (string, error) {
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(prometheusRule, &pr); err != nil {
		return "", fmt.Errorf("reading the PrometheusRule: %w", err)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		return "", fmt.Errorf("not a PrometheusRule with rule groups (kind %q, %d groups)", pr.Kind, len(pr.Spec.Groups))
	}
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		return "", err
	}
	return string(out), nil
}
