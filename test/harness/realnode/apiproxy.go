package realnode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
)

// APIAddress is where pods reach kube-apiserver: kube-apiserver listens
// on loopback, which a pod cannot reach, so the node forwards TCP from its
// own address on the bridge to it. TLS passes through untouched.
var APIAddress = net.JoinHostPort(NodeIP, apiPort)

const apiPort = "6443"

// apiServerName is a name kube-apiserver's serving certificate holds (the
// simulated cluster's certificate names localhost and 127.0.0.1 only):
// clients behind the forwarder check the certificate against it.
const apiServerName = "localhost"

// PodKubeconfig is a kubeconfig for a program in a pod: kube-apiserver at
// APIAddress, trusted through the cluster's root CA, as the pod's service
// account, both from the files the kubelet mounts into every pod that
// mounts its service account's token. The cluster's services use it
// because in-cluster configuration would dial the "kubernetes" Service,
// whose endpoint is an address of the host's that pods cannot reach.
const PodKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: https://` + NodeIP + `:` + apiPort + `
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    tls-server-name: ` + apiServerName + `
users:
- name: service-account
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
contexts:
- name: cluster
  context:
    cluster: cluster
    user: service-account
current-context: cluster
`

// apiForwarder forwards the connections of APIAddress to kube-apiserver.
type apiForwarder struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// startAPIForwarder listens on APIAddress and forwards to the host and
// port of the kubeconfig's server.
func (n *Node) startAPIForwarder() error {
	cfg, err := restConfig(n.opts.Kubeconfig)
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("the kubeconfig's server %q: %w", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", APIAddress)
	if err != nil {
		return fmt.Errorf("forwarding kube-apiserver to pods: %w", err)
	}
	f := &apiForwarder{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	n.api = f
	return nil
}

func (f *apiForwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.forward(c)
	}
}

func (f *apiForwarder) forward(c net.Conn) {
	defer f.wg.Done()
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !f.track(c, up) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	f.untrack(c, up)
}

// track records the connections, or closes them when the forwarder is
// closed.
func (f *apiForwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *apiForwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}

// close stops listening, closes every forwarded connection and waits for
// the forwarding to end.
func (f *apiForwarder) close() error {
	err := f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
