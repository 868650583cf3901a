package makerun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/freeport"

	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

const (
	// readyWait bounds make run's start: building the images (minutes
	// when BuildKit's cache is cold), waiting for the machine's real node
	// lock that other suites hold, the cluster and the sample Echo.
	readyWait = 30 * time.Minute
	// rolloutWait bounds the sample Echo's rollout after its change.
	rolloutWait = 4 * time.Minute
	// newMessage is the sample Echo's message after the test changes it.
	newMessage = "Hello after a rollout"
)

// readyLine is the line make run prints once the sample Echo answers
// through the forward, with the curl command that reaches it.
var readyLine = regexp.MustCompile(`echo-sample answers: curl (http://127\.0\.0\.1:\d+/hello)`)

// TestMakeRunForwardOutlivesRolloutsAndCtrlCLeavesNothing runs make run
// as a terminal does, changes the sample Echo and checks that the printed
// curl command reaches the new pods once the old ones are gone, then sends
// SIGINT to the whole process group, as Ctrl-C does, and checks that the
// run left nothing on the host.
func TestMakeRunForwardOutlivesRolloutsAndCtrlCLeavesNothing(t *testing.T) {
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(workDir, "run")
	run, err := startMakeRun(runDir, port)
	if err != nil {
		t.Fatal(err)
	}
	line, before, err := run.waitForLine("echo-sample answers: curl", readyWait)
	if err != nil {
		t.Fatal(err)
	}
	m := readyLine.FindStringSubmatch(line)
	if m == nil || m[1] != "http://127.0.0.1:"+strconv.Itoa(port)+"/hello" {
		t.Fatalf("make run printed %q: no curl command of port %d", line, port)
	}
	url := m[1]
	if !slices.ContainsFunc(before, func(l string) bool { return strings.Contains(l, `"message":"Hello from echo-sample"`) }) {
		t.Errorf("make run did not show the sample Echo's answer before its ready line:\n%s", run.tail(20))
	}
	if got := mustAnswer(t, url); got.Message != "Hello from echo-sample" {
		t.Errorf("the printed curl command answers %+v, want the sample's message", got)
	}

	t.Run("the forward outlives a rollout", func(t *testing.T) {
		kubeconfig := filepath.Join(runDir, "kubeconfig")
		oldPods := echoPods(t, kubeconfig)
		kubectl(t, kubeconfig, "patch", "echo", "echo-sample", "--type", "merge",
			"-p", fmt.Sprintf(`{"spec":{"message":%q}}`, newMessage))
		// Once no old pod is left, the forward can only have followed the
		// Service to the new ones.
		waitFor(t, rolloutWait, "the old pods to be gone", func() (bool, string) {
			pods := echoPods(t, kubeconfig)
			return !slices.ContainsFunc(pods, func(p string) bool { return slices.Contains(oldPods, p) }),
				fmt.Sprintf("pods %v, the old %v", pods, oldPods)
		})
		var last answer
		waitFor(t, rolloutWait, "the new message through the forward", func() (bool, string) {
			got, err := get(url)
			last = got
			return err == nil && got.Message == newMessage, fmt.Sprintf("%+v, %v", got, err)
		})
		if slices.Contains(oldPods, last.Instance) {
			t.Errorf("the answer came from the old pod %s", last.Instance)
		}
		// Every new connection reaches a pod.
		for range 3 {
			if got := mustAnswer(t, url); got.Message != newMessage {
				t.Errorf("after the rollout the printed curl command answers %+v, want %q", got, newMessage)
			}
		}
	})

	if err := run.interrupt(); err != nil {
		t.Fatal(err)
	}
	if code := run.cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("make run exited with %d after Ctrl-C, want 130; its output ends with:\n%s", code, run.tail(20))
	}
	checkNothingLeft(t, run)
}

// answer is what the echo server answers.
type answer struct {
	Message  string `json:"message"`
	Instance string `json:"instance"`
}

// get runs the request of the printed curl command, on a new connection.
func get(url string) (answer, error) {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return answer{}, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return answer{}, fmt.Errorf("%w: %s", err, body)
	}
	return a, nil
}

func mustAnswer(t *testing.T, url string) answer {
	t.Helper()
	a, err := get(url)
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	return a
}

// echoPods are the names of the sample Echo's pods.
func echoPods(t *testing.T, kubeconfig string) []string {
	t.Helper()
	out := kubectl(t, kubeconfig, "get", "pods", "-l", "app.kubernetes.io/instance=echo-sample",
		"-o", "jsonpath={.items[*].metadata.name}")
	return strings.Fields(out)
}

func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Getenv("KUBECTL"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitFor polls cond every second until it holds, and fails the test
// with cond's last state after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", timeout, what, state)
		}
		time.Sleep(time.Second)
	}
}

// checkNothingLeft fails the test for anything of the run left on the
// host: a process of its session or naming its directory (containerd's
// shims), a mount under its directory, the node's bridge, cgroups or
// routes. It reads the host while it holds the machine's real-node lock,
// so that no other node is up meanwhile.
func checkNothingLeft(t *testing.T, run *makeRun) {
	t.Helper()
	release, err := realnode.HoldMachine()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = release() }()
	for _, p := range processesOf(run.pgid(), run.runDir) {
		t.Errorf("a process is left: %s", p)
	}
	mounts, err := realnode.MountsUnder(run.runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		t.Errorf("a mount is left: %s", m)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", realnode.Bridge)); err == nil {
		t.Errorf("the bridge %s is left", realnode.Bridge)
	}
	if left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", "k8s.io")); len(left) > 0 {
		t.Errorf("the containers' cgroups are left: %v", left)
	}
	// Read from the routing table: nothing is sent.
	out, err := exec.Command("ip", "route", "show", "type", "blackhole").Output()
	if err != nil {
		t.Fatalf("ip route show type blackhole: %v", err)
	}
	for _, cidr := range []string{simcluster.ServiceNetwork, simcluster.PodNetwork, realnode.PodCIDR} {
		if strings.Contains(string(out), cidr) {
			t.Errorf("the blackhole route for %s is left", cidr)
		}
	}
}

// processesOf lists the processes of session sid, and those whose command
// line names dir, each as pid and command line.
func processesOf(sid int, dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if sessionOf(string(stat)) == sid || strings.Contains(string(cmdline), dir+"/") {
			out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// sessionOf reads the session id from /proc/PID/stat: after the command
// name in parentheses come state, ppid, pgrp and session.
func sessionOf(stat string) int {
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(fields) < 4 {
		return 0
	}
	sid, _ := strconv.Atoi(fields[3])
	return sid
}
