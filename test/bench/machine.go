//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machineInfo describes the machine the benchmark ran on.
type machineInfo struct {
	CPU         string `json:"cpu"`
	Cores       int    `json:"cores"`
	MemoryBytes uint64 `json:"memoryBytes"`
	Kernel      string `json:"kernel"`
	Go          string `json:"go"`
}

// versionInfo names what was compared and on what.
type versionInfo struct {
	EchoOperator        string `json:"echoOperator"`
	HelmOperatorPlugins string `json:"helmOperatorPlugins"`
	HelmOperatorBinary  string `json:"helmOperatorBinary,omitempty"`
	KubeAPIServer       string `json:"kubeAPIServer"`
	KubeAPIServerBinary string `json:"kubeAPIServerBinary"`
	EtcdBinary          string `json:"etcdBinary"`
	KwokBinary          string `json:"kwokBinary"`
}

// readMachineInfo reads /proc; what cannot be read is left empty.
func readMachineInfo() machineInfo {
	m := machineInfo{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = procField(b, "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := strconv.ParseUint(strings.TrimSuffix(procField(b, "MemTotal"), " kB"), 10, 64); err == nil {
			m.MemoryBytes = kb * 1024
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file such as cpuinfo or meminfo.
func procField(b []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// commandOutput runs a command in dir and returns its trimmed output, or
// "" if it fails.
func commandOutput(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
