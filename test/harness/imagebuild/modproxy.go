package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
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
// layout of a GOPROXY, over HTTP. A module version the cache lacks is
// downloaded into it first by the host's go command, through the host's
// GOPROXY (the Go module proxy), so that a build never fails for a module
// the host has not needed yet.
type moduleProxy struct {
	srv      *http.Server
	done     chan error
	download string // the module cache's cache/download
	log      *slog.Logger
	mu       sync.Mutex // one go mod download at a time
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

// startModuleProxy serves modCache/cache/download at ModuleProxyAddr.
func startModuleProxy(modCache string, log *slog.Logger) (*moduleProxy, error) {
	l, err := net.Listen("tcp", ModuleProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("the module proxy's address: %w", err)
	}
	p := &moduleProxy{download: filepath.Join(modCache, "cache", "download"), log: log, done: make(chan error, 1)}
	files := http.FileServer(http.Dir(p.download))
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		p.fill(r.Context(), r.URL.Path)
		files.ServeHTTP(w, r)
	})}
	go func() { p.done <- p.srv.Serve(l) }()
	return p, nil
}

// fill downloads the module version that a request for its .info, .mod or
// .zip names into the cache, when the cache lacks that file.
func (p *moduleProxy) fill(ctx context.Context, urlPath string) {
	mod, version, ok := moduleVersion(urlPath)
	if !ok {
		return
	}
	if _, err := os.Stat(filepath.Join(p.download, filepath.FromSlash(strings.TrimPrefix(urlPath, "/")))); err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod+"@"+version)
	// Outside any module, with the host's GOPROXY.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	p.log.Info("module fetched into the module cache for a build", "module", mod, "version", version, "error", err)
	if err != nil {
		p.log.Info("go mod download failed", "output", strings.TrimSpace(string(out)))
	}
}

// moduleVersion reads the module and version that a GOPROXY request for
// <module>/@v/<version>.info, .mod or .zip names, unescaped; ok is false
// for other requests (lists, @latest) and for paths that are no module's.
func moduleVersion(urlPath string) (mod, version string, ok bool) {
	escMod, file, found := strings.Cut(strings.TrimPrefix(urlPath, "/"), "/@v/")
	if !found || strings.Contains(urlPath, "..") || strings.Contains(file, "/") {
		return "", "", false
	}
	ext := path.Ext(file)
	if ext != ".info" && ext != ".mod" && ext != ".zip" {
		return "", "", false
	}
	mod, ok1 := unescapeModulePath(escMod)
	version, ok2 := unescapeModulePath(strings.TrimSuffix(file, ext))
	if !ok1 || !ok2 || mod == "" || version == "" || strings.HasPrefix(version, "-") {
		return "", "", false
	}
	return mod, version, true
}

// unescapeModulePath undoes the module cache's case encoding: "!x" stands
// for "X". Only the characters of module paths and versions pass.
func unescapeModulePath(s string) (string, bool) {
	var b strings.Builder
	bang := false
	for _, r := range s {
		switch {
		case bang:
			if r < 'a' || r > 'z' {
				return "", false
			}
			b.WriteRune(r - 'a' + 'A')
			bang = false
		case r == '!':
			bang = true
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', strings.ContainsRune("-._~/+", r):
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), !bang
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
