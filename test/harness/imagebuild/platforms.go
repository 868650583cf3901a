package imagebuild

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ProjectBinaries are the executables of the project's images, by
// Dockerfile stage.
var ProjectBinaries = map[string]string{"operator": "/manager", "echo-server": "/echo-server"}

// elfMachines are the ELF machines of the architectures images are built
// for.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// CheckIndex reads the image index repo@ref from the registry at host and
// checks that it holds exactly platforms, that each manifest's
// configuration says the platform the index gives it, and that the
// executable binary in its layers was compiled for that architecture. It
// returns the index and every mismatch found.
func CheckIndex(ctx context.Context, host, repo, ref, binary string, platforms []string) (*Index, error) {
	idx, err := ReadIndex(ctx, host, repo, ref)
	if err != nil {
		return nil, err
	}
	var errs []error
	var held []string
	for _, m := range idx.Manifests {
		p := m.Platform.OS + "/" + m.Platform.Architecture
		held = append(held, p)
		if m.Config.OS != m.Platform.OS || m.Config.Architecture != m.Platform.Architecture {
			errs = append(errs, fmt.Errorf("%s: the image's configuration says %s/%s", p, m.Config.OS, m.Config.Architecture))
		}
		bin, ok := m.Files[binary]
		want, known := elfMachines[m.Platform.Architecture]
		switch {
		case !known:
			errs = append(errs, fmt.Errorf("%s: no known ELF machine for architecture %s", p, m.Platform.Architecture))
		case !ok:
			errs = append(errs, fmt.Errorf("%s: the image has no %s", p, binary))
		case bin.Machine != want:
			errs = append(errs, fmt.Errorf("%s: %s is a %s executable, want %s", p, binary, bin.Machine, want))
		}
	}
	slices.Sort(held)
	want := slices.Sorted(slices.Values(platforms))
	if !slices.Equal(held, want) {
		errs = append(errs, fmt.Errorf("the index holds %s, want %s", strings.Join(held, ", "), strings.Join(want, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return idx, fmt.Errorf("%s/%s@%s: %w", host, repo, ref, err)
	}
	return idx, nil
}
