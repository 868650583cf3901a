package realnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	ipForwardFile = "/proc/sys/net/ipv4/ip_forward"
	// savedIPForward keeps the host's IP forwarding setting from before
	// the first node, so a start after a crash can still restore it.
	savedIPForward = "echo-realnode.ip_forward"
	cniNetwork     = "echo-pods"
)

// blackholed are the cluster's ranges the host blackholes: the Service
// range, and the pod range unless it is the bridge's own subnet, which the
// bridge's connected route keeps on the bridge.
func (n *Node) blackholed() []string {
	cidrs := []string{n.opts.ServiceNetwork}
	if n.opts.PodNetwork != PodCIDR {
		cidrs = append(cidrs, n.opts.PodNetwork)
	}
	return cidrs
}

// setUpNetwork blackholes the cluster's ranges, creates the bridge with
// the node's address, and writes the CNI configuration.
func (n *Node) setUpNetwork() error {
	if err := n.saveIPForward(); err != nil {
		return err
	}
	for _, cidr := range n.blackholed() {
		if err := ip("route", "replace", "blackhole", cidr); err != nil {
			return err
		}
	}
	if err := ip("link", "add", Bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := ip("addr", "add", NodeIP+"/24", "dev", Bridge); err != nil {
		return err
	}
	if err := ip("link", "set", Bridge, "up"); err != nil {
		return err
	}
	return n.writeCNIConfig()
}

// writeCNIConfig has pods join the bridge with an address of PodCIDR and a
// route to the pod network only: no default route, no masquerading.
func (n *Node) writeCNIConfig() error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       cniNetwork,
		"plugins": []map[string]any{
			{
				"type": "bridge", "bridge": Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type": "host-local", "dataDir": n.path("cni", "ipam"),
					"ranges": [][]map[string]string{{{"subnet": PodCIDR, "gateway": NodeIP}}},
					"routes": n.podRoutes(),
				},
			},
			{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	raw, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(n.path("cni", "10-echo-pods.conflist"), raw, 0o644)
}

// podRoutes are the pods' routes through the bridge: to the Service range,
// and to the pod range when it is wider than the bridge's subnet, to which
// their interface's own route leads.
func (n *Node) podRoutes() []map[string]string {
	routes := []map[string]string{{"dst": n.opts.ServiceNetwork}}
	if n.opts.PodNetwork != PodCIDR {
		routes = append(routes, map[string]string{"dst": n.opts.PodNetwork})
	}
	return routes
}

// saveIPForward records the host's IP forwarding setting, unless an
// earlier node already did, which the bridge plugin turns on.
func (n *Node) saveIPForward() error {
	saved := filepath.Join(os.TempDir(), savedIPForward)
	if b, err := os.ReadFile(saved); err == nil {
		n.ipForward = string(b)
		return nil
	}
	b, err := os.ReadFile(ipForwardFile)
	if err != nil {
		return err
	}
	n.ipForward = strings.TrimSpace(string(b))
	return os.WriteFile(saved, []byte(n.ipForward), 0o600)
}

// tearDownNetwork removes the bridge and the blackhole routes, and puts
// IP forwarding back.
func (n *Node) tearDownNetwork() error {
	var errs []error
	if linkExists(Bridge) {
		errs = append(errs, ip("link", "del", Bridge))
	}
	for _, cidr := range n.blackholed() {
		if cidr != "" && routeIs(cidr, "blackhole") {
			errs = append(errs, ip("route", "del", "blackhole", cidr))
		}
	}
	saved := filepath.Join(os.TempDir(), savedIPForward)
	if b, err := os.ReadFile(saved); err == nil {
		errs = append(errs, os.WriteFile(ipForwardFile, b, 0o644), os.Remove(saved))
	}
	return errors.Join(append(errs, removeCNIResults())...)
}

// cniCacheDir is where CNI keeps the result of each pod's network set-up
// until the pod's teardown, which a stopped node never runs.
const cniCacheDir = "/var/lib/cni"

// removeCNIResults removes the cached results of the node's network, and
// the cache's directories when nothing else is left in them.
func removeCNIResults() error {
	results, _ := filepath.Glob(filepath.Join(cniCacheDir, "results", cniNetwork+"-*"))
	var errs []error
	for _, f := range results {
		errs = append(errs, os.Remove(f))
	}
	_ = os.Remove(filepath.Join(cniCacheDir, "results"))
	_ = os.Remove(cniCacheDir)
	return errors.Join(errs...)
}

// RouteGet is the host's answer to `ip route get addr` in the network
// namespace netns ("" for the host's own), read from the routing table:
// nothing is sent.
func RouteGet(netns, addr string) (string, error) {
	args := []string{"ip", "route", "get", addr}
	if netns != "" {
		args = append([]string{"nsenter", "--net=" + netns}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// routeIs reports whether the host has a route of type kind for cidr.
func routeIs(cidr, kind string) bool {
	out, err := exec.Command("ip", "route", "show", "type", kind, cidr).Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}
