package imagebuild

import (
	"fmt"
	"os"
	"runtime"
)

// Binaries are the programs an Env runs, from `make image-tools`
// (hack/build-image-tools.sh) and `make node` (runc), which the Makefile
// passes as environment variables.
type Binaries struct {
	Buildkitd, Buildctl, Registry string
	// Runc runs buildkitd's build steps: the real node's.
	Runc string
	// Busybox is a static busybox, the shell and userland of the Go
	// builder's stand-in (Debian's busybox-static).
	Busybox string
}

func (b *Binaries) binaryEnv() map[string]*string {
	return map[string]*string{
		"BUILDKITD": &b.Buildkitd, "BUILDCTL": &b.Buildctl, "REGISTRY": &b.Registry,
		"RUNC": &b.Runc, "BUSYBOX": &b.Busybox,
	}
}

// LocateBinaries reads the binaries' paths from the environment.
func LocateBinaries() (Binaries, error) {
	var b Binaries
	for env, p := range b.binaryEnv() {
		if *p = os.Getenv(env); *p == "" {
			return b, fmt.Errorf("$%s is not set: run `make image-tools node`, or the tests through make", env)
		}
		if _, err := os.Stat(*p); err != nil {
			return b, fmt.Errorf("$%s: %w", env, err)
		}
	}
	return b, nil
}

// Unavailable says why no image can be built here, or is "": buildkitd
// runs rootful on Linux.
func Unavailable() string {
	if runtime.GOOS != "linux" {
		return "building images needs Linux"
	}
	if os.Geteuid() != 0 {
		return "building images needs root (buildkitd's mounts and runc)"
	}
	return ""
}
