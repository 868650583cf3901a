package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ModuleProxyAddr is where the module proxy of builds listens, and the
// GOPROXY of the Go builder's stand-in (http://ModuleProxyAddr). It is
// fixed: a port that changed from run to run would change the stand-in's
// digest, and with it the cache of every build on it. Only one Env runs at
// a time (Start's lock), so the address is free. 127.0.0.0/8 is the
// loopback range: the address needs no setup.
const ModuleProxyAddr = "127.0.64.1:3000"

// moduleProxy serves a module cache's download directory, which has the
// layout of a GOPROXY, over HTTP.
type moduleProxy struct {
	srv  *http.Server
	done chan error
}

// goModCache is the host's module cache (go env GOMODCACHE).
func goModCache(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("go env GOMODCACHE is empty")
	}
	return dir, nil
}

// startModuleProxy serves modCache/cache/download at ModuleProxyAddr,
// read-only.
func startModuleProxy(modCache string) (*moduleProxy, error) {
	l, err := net.Listen("tcp", ModuleProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("the module proxy's address: %w", err)
	}
	files := http.FileServer(http.Dir(filepath.Join(modCache, "cache", "download")))
	p := &moduleProxy{
		srv: &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				http.Error(w, "read-only", http.StatusMethodNotAllowed)
				return
			}
			files.ServeHTTP(w, r)
		})},
		done: make(chan error, 1),
	}
	go func() { p.done <- p.srv.Serve(l) }()
	return p, nil
}

func (p *moduleProxy) stop() error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if serveErr := <-p.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
