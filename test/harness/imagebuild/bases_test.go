package imagebuild

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestStaticContextIsDatedTheEpoch lays out the distroless stand-in's
// context: every entry dated 1970 (so its layers, and the image's digest,
// depend on the contents only), the modes and the nonroot user.
func TestStaticContextIsDatedTheEpoch(t *testing.T) {
	if _, err := os.Stat(caBundle); err != nil {
		t.Skipf("no CA certificates on this machine: %v", err)
	}
	dir := t.TempDir()
	if err := staticContext(dir); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if info.ModTime().Unix() != 0 {
			t.Errorf("%s is dated %s", p, info.ModTime())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{
		"rootfs/tmp":    fs.ModeDir | fs.ModeSticky | 0o777,
		"homes/nonroot": fs.ModeDir | 0o700,
		"rootfs/root":   fs.ModeDir | 0o700,
	} {
		info, err := os.Stat(filepath.Join(dir, p))
		if err != nil || info.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %s", p, info, err, want)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(dir, "rootfs", "etc", "passwd"))
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:nonroot:/home/nonroot:") {
		t.Errorf("/etc/passwd: %q, %v", passwd, err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil || !strings.Contains(string(dockerfile), "COPY --chown=65532:65532 homes/ /home/") {
		t.Errorf("Dockerfile: %q, %v", dockerfile, err)
	}
}

// TestBasePlatformsAreTheMakefiles: the distroless stand-in exists for
// every platform `make docker-buildx` builds (the Makefile's PLATFORMS),
// which the CSV's labels name too; a build for another would find no base.
func TestBasePlatformsAreTheMakefiles(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(reporoot.Must(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PLATFORMS \?= (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no PLATFORMS")
	}
	if platforms := strings.Split(string(m[1]), ","); !slices.Equal(platforms, BasePlatforms) {
		t.Errorf("the Makefile's PLATFORMS are %v, BasePlatforms %v: make them equal", platforms, BasePlatforms)
	}
}
