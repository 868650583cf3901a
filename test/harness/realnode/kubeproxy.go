package realnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// kubeProxyHealthz is kube-proxy's health server, on the node's address:
// it answers 200 once kube-proxy has written its rules.
var kubeProxyHealthz = net.JoinHostPort(NodeIP, "10256")

// kubeProxyConfig is kube-proxy's configuration: nftables mode, the
// cluster's pod network as the local traffic, and no conntrack setting, so
// it writes no sysctl (the host may not let it). Its servers listen on the
// node's address only.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: {{kubeconfig}}
hostnameOverride: {{nodeName}}
bindAddress: {{nodeIP}}
healthzBindAddress: {{healthz}}
metricsBindAddress: {{nodeIP}}:10249
clusterCIDR: {{podNetwork}}
nodePortAddresses: ["{{nodeIP}}/32"]
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  tcpBeLiberal: false
  udpTimeout: 0s
  udpStreamTimeout: 0s
`

// kubeProxyTables are the nftables tables kube-proxy writes: a stop, or a
// start after a crash, deletes them.
var kubeProxyTables = [][]string{{"ip", "kube-proxy"}, {"ip6", "kube-proxy"}}

// startKubeProxy writes kube-proxy's configuration, starts it, and waits
// until it has written its rules.
func (n *Node) startKubeProxy(ctx context.Context) error {
	config := strings.NewReplacer("{{kubeconfig}}", n.opts.Kubeconfig, "{{nodeName}}", NodeName, "{{nodeIP}}", NodeIP,
		"{{healthz}}", kubeProxyHealthz, "{{podNetwork}}", n.opts.PodNetwork).Replace(kubeProxyConfig)
	file := n.path("kube-proxy", "config.yaml")
	if err := os.MkdirAll(n.path("kube-proxy"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		return err
	}
	// kube-proxy runs nft, which lives in sbin.
	env := []string{"PATH=" + os.Getenv("PATH") + ":/usr/sbin:/sbin"}
	if err := n.startProcess("kube-proxy", env, n.opts.KubeProxy, "--config="+file); err != nil {
		return fmt.Errorf("starting kube-proxy: %w", err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if exited := n.exited(); exited != "" {
			return false, fmt.Errorf("%s exited (logs in %s)", exited, n.LogDir())
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+kubeProxyHealthz+"/healthz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-proxy's rules: %w (logs in %s)", err, n.LogDir())
	}
	return nil
}

// deleteKubeProxyTables deletes kube-proxy's nftables tables, those that
// exist.
func deleteKubeProxyTables() error {
	nft, err := lookNft()
	if err != nil {
		// Without nft no kube-proxy can have written a table.
		return nil
	}
	var errs []error
	for _, t := range kubeProxyTables {
		if exec.Command(nft, "list", "table", t[0], t[1]).Run() != nil {
			continue
		}
		if out, err := exec.Command(nft, "delete", "table", t[0], t[1]).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s %s: %w: %s", t[0], t[1], err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// KubeProxyTables lists the tables of kube-proxy's that the host holds,
// as "family name".
func KubeProxyTables() ([]string, error) {
	nft, err := lookNft()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range kubeProxyTables {
		if exec.Command(nft, "list", "table", t[0], t[1]).Run() == nil {
			out = append(out, t[0]+" "+t[1])
		}
	}
	return out, nil
}

func lookNft() (string, error) {
	for _, p := range []string{"/usr/sbin/nft", "/sbin/nft"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("nft")
}
