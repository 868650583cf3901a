package imagebuild

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
