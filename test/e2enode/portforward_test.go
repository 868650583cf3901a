package e2enode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// echoPort is the port of an Echo's Service.
const echoPort = 80

// getThroughPortForward runs `kubectl port-forward target :80` to an
// Echo's Service, as the README shows, and returns the answer to a GET of
// path through it.
func getThroughPortForward(t *testing.T, ns, target, path string) string {
	t.Helper()
	base, stop := portForward(t, ns, target, echoPort)
	defer stop()
	return mustGet(t, base+path)
}

// portForward runs `kubectl port-forward target :port` and returns the
// base URL of the local port it opens, and a function that ends it.
func portForward(t *testing.T, ns, target string, port int) (base string, stop func()) {
	t.Helper()
	base, stop, err := startPortForward(ns, target, port)
	if err != nil {
		t.Fatalf("kubectl port-forward %s: %v", target, err)
	}
	return base, stop
}

// getOnce gets path through a new port-forward to an Echo's Service and
// returns the answer or what went wrong, for polls: a pod the forward
// picked may be going away.
func getOnce(ns, target, path string) (string, error) {
	base, stop, err := startPortForward(ns, target, echoPort)
	if err != nil {
		return "", err
	}
	defer stop()
	return httpGet(base + path)
}

func startPortForward(ns, target string, port int) (base string, stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlBin, "port-forward", "-n", ns, target, "--address", "127.0.0.1", fmt.Sprintf(":%d", port))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return "", nil, err
	}
	stop = func() {
		cancel()
		_ = cmd.Wait()
	}
	local, err := forwardedAddress(out)
	if err != nil {
		stop()
		return "", nil, err
	}
	return "http://" + local, stop, nil
}

// mustGet gets url and fails the test unless it answers 200.
func mustGet(t *testing.T, url string) string {
	t.Helper()
	body, err := httpGet(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return body
}

// forwardedAddress reads port-forward's "Forwarding from 127.0.0.1:P -> Q"
// and returns 127.0.0.1:P, then drains the rest of its output.
func forwardedAddress(out io.Reader) (string, error) {
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Forwarding from 127.0.0.1:") {
				line <- sc.Text()
				break
			}
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-line:
		if local, _, found := strings.Cut(strings.TrimPrefix(l, "Forwarding from "), " "); ok && found {
			return local, nil
		}
		return "", errors.New("it ended without saying where it listens")
	case <-time.After(time.Minute):
		return "", errors.New("it did not say where it listens within a minute")
	}
}

// httpGet gets url, on this machine only (no proxy), and wants a 200.
func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), err
}
