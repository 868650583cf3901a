package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// EnvStateDir names the environment variable that overrides
// DefaultStateDir.
const EnvStateDir = "BUILDKIT_STATE_DIR"

// DefaultStateDir is where buildkitd keeps its state, the layer cache that
// later builds reuse: $BUILDKIT_STATE_DIR, else
// $XDG_CACHE_HOME/echo-operator/buildkit (~/.cache/echo-operator/buildkit).
func DefaultStateDir() (string, error) {
	if dir := os.Getenv(EnvStateDir); dir != "" {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for buildkitd's state (set $%s): %w", EnvStateDir, err)
	}
	return filepath.Join(cache, "echo-operator", "buildkit"), nil
}

// Options configure an Env.
type Options struct {
	Binaries
	// StateDir is buildkitd's state; empty means DefaultStateDir().
	StateDir string
	// WorkDir holds the registry's storage (unless RegistryDir is set),
	// buildkitd's configuration and the logs. Required.
	WorkDir string
	// RegistryDir, when set, holds the registry's storage instead, kept
	// from one Env to the next.
	RegistryDir string
	// Logger logs what the Env does; nil means slog.Default().
	Logger *slog.Logger
}

// Env is a registry on loopback, a module proxy and a buildkitd whose
// builds pull their base images from that registry and push there.
type Env struct {
	// Registry serves the images.
	Registry *Registry
	opts     Options
	log      *slog.Logger
	lock     *os.File
	proxy    *moduleProxy
	bk       *buildkitd
	sockDir  string
}

// Start takes the machine-wide lock of Envs (waiting for it while ctx
// allows), starts the registry, the module proxy and buildkitd, and pushes
// the stand-ins of the base images. On error, what it started is stopped.
func Start(ctx context.Context, o Options) (_ *Env, err error) {
	if o.WorkDir == "" {
		return nil, errors.New("imagebuild: Options.WorkDir is required")
	}
	if o.StateDir == "" {
		if o.StateDir, err = DefaultStateDir(); err != nil {
			return nil, err
		}
	}
	if o.RegistryDir == "" {
		o.RegistryDir = filepath.Join(o.WorkDir, "registry")
	}
	e := &Env{opts: o, log: o.Logger}
	if e.log == nil {
		e.log = slog.Default()
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	if e.lock, err = lockMachine(ctx, e.log); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.LogDir(), 0o755); err != nil {
		return nil, err
	}
	if e.Registry, err = StartRegistry(ctx, o.Registry, o.RegistryDir); err != nil {
		return nil, err
	}
	modCache, err := goModCache(ctx)
	if err != nil {
		return nil, err
	}
	if e.proxy, err = startModuleProxy(modCache, e.log); err != nil {
		return nil, err
	}
	if e.sockDir, err = os.MkdirTemp("", "echo-buildkit-"); err != nil {
		return nil, err
	}
	if e.bk, err = startBuildkitd(ctx, o.Binaries, o.StateDir, e.Registry.Host, e.sockDir, e.LogDir()); err != nil {
		return nil, err
	}
	e.log.Info("image builder ready", "registry", e.Registry.Host, "moduleProxy", ModuleProxyAddr,
		"state", o.StateDir, "logs", e.LogDir())
	if err := e.pushBases(ctx); err != nil {
		return nil, fmt.Errorf("the base images' stand-ins: %w", err)
	}
	return e, nil
}

// Stop stops buildkitd, the module proxy and the registry, and releases
// the lock. buildkitd's state and the registry's storage stay.
func (e *Env) Stop() error {
	var errs []error
	if e.bk != nil {
		errs = append(errs, e.bk.stop())
		e.bk = nil
	}
	if e.sockDir != "" {
		errs = append(errs, os.RemoveAll(e.sockDir))
		e.sockDir = ""
	}
	if e.proxy != nil {
		errs = append(errs, e.proxy.stop())
		e.proxy = nil
	}
	if e.Registry != nil {
		errs = append(errs, e.Registry.Stop())
		e.Registry = nil
	}
	if e.lock != nil {
		errs = append(errs, e.lock.Close())
		e.lock = nil
	}
	return errors.Join(errs...)
}

// LogDir holds the logs of buildkitd and of each build.
func (e *Env) LogDir() string { return filepath.Join(e.opts.WorkDir, "logs") }

// Ref is the reference of repo:tag in the registry.
func (e *Env) Ref(repo, tag string) string { return e.Registry.Host + "/" + repo + ":" + tag }

// Build builds b and pushes it (or writes its Archive), and returns the
// image's digest.
func (e *Env) Build(ctx context.Context, b Build) (string, error) {
	start := time.Now()
	digest, err := e.bk.build(ctx, b)
	if err != nil {
		return "", err
	}
	e.log.Info("image built", "ref", b.Ref, "target", b.Target, "digest", digest, "took", time.Since(start).Round(time.Millisecond))
	return digest, nil
}

// lockPath is the machine-wide lock of Envs: one buildkitd state, one
// module proxy address.
var lockPath = filepath.Join(os.TempDir(), "echo-imagebuild.lock")

// lockMachine takes the lock, waiting while another Env holds it.
func lockMachine(ctx context.Context, log *slog.Logger) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", lockPath, err)
		}
		if !waited {
			log.Info("waiting for another image builder on this machine", "lock", lockPath)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", lockPath, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
