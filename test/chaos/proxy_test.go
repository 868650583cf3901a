//go:build linux

package chaos

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// errKilled ends a response the killed manager must never see.
var errKilled = errors.New("the manager was killed")

// killProxy stands between one manager and the kube-apiserver. It counts
// the manager's writes to one namespace and, once armed, runs its kill
// action right after the API server has answered the chosen write, before
// the answer is passed on: the write is stored, the manager never learns
// it was. From then until Resume every request, and every answer still on
// its way, is dropped, so nothing the dying manager sent after that write
// reaches the API server and nothing reaches the manager.
type killProxy struct {
	namespace string
	server    *httptest.Server
	proxy     *httputil.ReverseProxy

	mu      sync.Mutex
	writes  []string // the counted writes, in order
	killAt  int      // 0: never
	kill    func()
	fired   bool   // the kill ran since Arm
	victim  string // the write the kill came after
	blocked bool
}

// newKillProxy starts a proxy on 127.0.0.1 in front of the API server of
// cfg, counting writes to namespace.
func newKillProxy(cfg *rest.Config, namespace string) (*killProxy, error) {
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's address: %w", err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the API server's transport: %w", err)
	}
	p := &killProxy{namespace: namespace}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:      transport,
		FlushInterval:  -1, // watches stream event by event
		ModifyResponse: p.answered,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if errors.Is(err, errKilled) {
				panic(http.ErrAbortHandler) // drop the connection: its client is dead
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.server = httptest.NewServer(p) // listens on 127.0.0.1
	return p, nil
}

// ServeHTTP refuses requests while the manager is being killed and passes
// the others on.
func (p *killProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.isBlocked() {
		panic(http.ErrAbortHandler)
	}
	p.proxy.ServeHTTP(w, r)
}

func (p *killProxy) isBlocked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked
}

// answered sees every answer of the API server before the manager does:
// it counts a successful write and, at the armed count, kills.
func (p *killProxy) answered(resp *http.Response) error {
	counted, what := p.countable(resp.Request)
	p.mu.Lock()
	if p.blocked {
		p.mu.Unlock()
		return errKilled
	}
	if !counted || resp.StatusCode < 200 || resp.StatusCode > 299 {
		p.mu.Unlock()
		return nil
	}
	p.writes = append(p.writes, what)
	if len(p.writes) != p.killAt {
		p.mu.Unlock()
		return nil
	}
	p.blocked, p.fired, p.victim = true, true, what
	kill := p.kill
	p.mu.Unlock()
	kill()
	return errKilled
}

// countable says whether a request is a write of the manager to the
// namespace that counts as a kill point, and describes it. Events are left
// out: the manager records them asynchronously and aggregates them, so
// their number and order vary from run to run, and none of the state that
// must converge depends on them. Leases are left out: leader election
// renews them on a timer.
func (p *killProxy) countable(r *http.Request) (bool, string) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false, ""
	}
	ns, resource, rest := splitPath(r.URL.Path)
	if ns != p.namespace || resource == "" || resource == "events" || resource == "leases" {
		return false, ""
	}
	return true, strings.TrimSpace(r.Method + " " + resource + " " + rest)
}

// splitPath reads the namespace, the resource and what follows (name,
// subresource) from an API path: /api/v1/namespaces/NS/RESOURCE/... or
// /apis/GROUP/VERSION/namespaces/NS/RESOURCE/....
func splitPath(path string) (namespace, resource, rest string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" && (parts[0] == "api" || parts[0] == "apis") {
			return parts[i+1], parts[i+2], strings.Join(parts[i+3:], "/")
		}
	}
	return "", "", ""
}

// Arm makes the proxy run kill right after the n-th write counted from now
// (n > 0); kill must end the manager before it returns.
func (p *killProxy) Arm(n int, kill func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes, p.killAt, p.kill, p.fired = nil, n, kill, false
}

// Disarm stops counting towards a kill and reports whether the kill
// already ran since Arm.
func (p *killProxy) Disarm() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killAt = 0
	return p.fired
}

// Resume lets requests through again, for the next manager.
func (p *killProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked, p.killAt = false, 0
}

// Victim is the write the kill came after, if it ran.
func (p *killProxy) Victim() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.victim
}

// Writes returns the writes counted since Arm.
func (p *killProxy) Writes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.writes...)
}

// WriteKubeconfig writes a kubeconfig for the proxy into dir. The proxy
// speaks plain HTTP on 127.0.0.1 and authenticates to the API server
// itself.
func (p *killProxy) WriteKubeconfig(dir string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["chaos"] = &clientcmdapi.Cluster{Server: p.server.URL}
	cfg.AuthInfos["chaos"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["chaos"] = &clientcmdapi.Context{Cluster: "chaos", AuthInfo: "chaos"}
	cfg.CurrentContext = "chaos"
	path := filepath.Join(dir, "kubeconfig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing the proxy's kubeconfig: %w", err)
	}
	return path, nil
}

// Close stops the proxy.
func (p *killProxy) Close() {
	p.server.CloseClientConnections()
	p.server.Close()
}
