package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
)

type verifyOptions struct {
	platform *ocispecs.Platform // the platform the layout must be for; nil: any
	labels   map[string]string  // labels the image must carry, as the Dockerfile sets them
	smoke    bool               // run the entrypoint with -help where the platform allows
}

// verifyLayout checks every image of the OCI image layout at dir against
// what the operator image must be, whoever built it: its configuration,
// and, in its filesystem, the manager, watches.yaml and the charts where
// the manager finds them, usable by the image's user.
func verifyLayout(dir string, ctx *buildContext, spec operatorSpec, o verifyOptions, out io.Writer) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		return fmt.Errorf("reading the layout %s: %w", dir, err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		return err
	}
	imgs, err := images(ii)
	if err != nil {
		return err
	}
	if len(imgs) == 0 {
		return fmt.Errorf("the layout %s holds no image", dir)
	}
	var problems []string
	for _, img := range imgs {
		found, err := verifyImage(img, ctx, spec, o, out)
		if err != nil {
			return err
		}
		problems = append(problems, found...)
	}
	for _, p := range problems {
		_, _ = fmt.Fprintln(out, p)
	}
	if len(problems) > 0 {
		return &failedError{what: fmt.Sprintf("imagecheck: the layout %s has %d problem(s)", dir, len(problems))}
	}
	return nil
}

// images returns the images of an index and of the indexes it holds,
// without attestations.
func images(ii v1.ImageIndex) ([]v1.Image, error) {
	m, err := ii.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []v1.Image
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			inner, err := ii.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			imgs, err := images(inner)
			if err != nil {
				return nil, err
			}
			out = append(out, imgs...)
		case d.MediaType.IsImage():
			if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
				continue
			}
			img, err := ii.Image(d.Digest)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		}
	}
	return out, nil
}

// imageFS is an image's filesystem, extracted. Every access goes through
// an os.Root, so that the image's symbolic links cannot lead out of it.
type imageFS struct {
	dir     string
	root    *os.Root
	headers map[string]*tar.Header // by absolute path
}

// rel turns an absolute path of the image into a path below its root.
func rel(p string) string {
	r := strings.TrimPrefix(path.Clean("/"+p), "/")
	if r == "" {
		return "."
	}
	return r
}

func (ifs *imageFS) read(p string) ([]byte, error) { return ifs.root.ReadFile(rel(p)) }

func (ifs *imageFS) open(p string) (*os.File, error) { return ifs.root.Open(rel(p)) }

// path is p on this machine's filesystem.
func (ifs *imageFS) path(p string) string { return filepath.Join(ifs.dir, filepath.FromSlash(rel(p))) }

func verifyImage(img v1.Image, ctx *buildContext, spec operatorSpec, o verifyOptions, out io.Writer) ([]string, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	platform := cfg.OS + "/" + cfg.Architecture
	var problems []string
	add := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf("%s (%s): ", digest.Hex[:12], platform)+fmt.Sprintf(format, a...))
	}
	uid, gid := verifyConfig(cfg, spec, o, add)
	tmp, err := os.MkdirTemp("", "imagecheck-rootfs-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	ifs, err := extract(img, tmp)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ifs.root.Close() }()
	workdir := cmpOr(cfg.Config.WorkingDir, "/")
	v := fsVerifier{fs: ifs, uid: uid, gid: gid, add: add}
	if v.binary(spec.managerPath, cfg.Architecture) {
		_, _ = fmt.Fprintf(out, "%s (%s): %s is a static %s executable, runnable and not writable by %s\n", digest.Hex[:12], platform, spec.managerPath, cfg.Architecture, cfg.Config.User)
	}
	watchesAt := resolve(workdir, spec.watchesPath)
	if v.sameAs(watchesAt, filepath.Join(ctx.dir, filepath.FromSlash(spec.watchesSrc))) {
		data, err := ifs.read(watchesAt)
		if err != nil {
			return nil, err
		}
		ws, err := parseWatches(data)
		if err != nil {
			add("%s: %v", watchesAt, err)
		}
		for _, w := range ws {
			n := v.chart(ctx, resolve(workdir, w.Chart), contextPath(w.Chart))
			_, _ = fmt.Fprintf(out, "%s (%s): %s names chart %s: %d files, as in the repository\n", digest.Hex[:12], platform, watchesAt, resolve(workdir, w.Chart), n)
		}
	}
	if o.smoke && len(problems) == 0 {
		if err := smokeRun(ifs, cfg, workdir, out); err != nil {
			add("%v", err)
		}
	}
	return problems, nil
}

// verifyConfig checks the image's configuration and returns the user and
// group it runs as (-1 when they are not numeric).
func verifyConfig(cfg *v1.ConfigFile, spec operatorSpec, o verifyOptions, add func(string, ...any)) (int, int) {
	if o.platform != nil && (cfg.OS != o.platform.OS || cfg.Architecture != o.platform.Architecture) {
		add("the image is for %s/%s, not %s/%s", cfg.OS, cfg.Architecture, o.platform.OS, o.platform.Architecture)
	}
	uid, gid, err := configUser(cfg.Config.User)
	if err != nil || strconv.Itoa(uid) != spec.uid {
		add("the image runs as user %q: want %s:%s (numeric, non-root)", cfg.Config.User, spec.uid, spec.uid)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{spec.managerPath}) {
		add("the entrypoint is %q: want [%q]", cfg.Config.Entrypoint, spec.managerPath)
	}
	for _, k := range slices.Sorted(maps.Keys(o.labels)) {
		if v, ok := cfg.Config.Labels[k]; !ok || v != o.labels[k] {
			add("label %s is %q: the Dockerfile sets %q", k, v, o.labels[k])
		}
	}
	return uid, gid
}

func configUser(u string) (int, int, error) {
	us, gs, hasGroup := strings.Cut(u, ":")
	uid, err := strconv.Atoi(us)
	if err != nil {
		return -1, -1, fmt.Errorf("user %q is not numeric", u)
	}
	gid := uid
	if hasGroup {
		if gid, err = strconv.Atoi(gs); err != nil {
			return -1, -1, fmt.Errorf("group %q is not numeric", gs)
		}
	}
	return uid, gid, nil
}

// extract writes the image's filesystem under dir, with the modes and, when
// this process may set them, the owners the image gives.
func extract(img v1.Image, dir string) (*imageFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	ifs := &imageFS{dir: dir, root: root, headers: map[string]*tar.Header{}}
	if err := ifs.write(img); err != nil {
		_ = root.Close()
		return nil, err
	}
	// The root of the image is traversable, as a runtime's is.
	return ifs, os.Chmod(dir, 0o755)
}

func (ifs *imageFS) write(img v1.Image) error {
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	var dirs []*tar.Header
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		ifs.headers[name] = h
		if err := ifs.root.MkdirAll(rel(path.Dir(name)), 0o755); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := ifs.root.MkdirAll(rel(name), 0o755); err != nil {
				return err
			}
			dirs = append(dirs, h)
		case tar.TypeReg:
			if err := ifs.writeFile(name, tr, h); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := ifs.root.Symlink(h.Linkname, rel(name)); err != nil {
				return err
			}
		}
	}
	// Directories last, as their modes may forbid writing into them.
	for _, h := range dirs {
		if err := ifs.own(path.Clean("/"+h.Name), h); err != nil {
			return err
		}
	}
	return nil
}

func (ifs *imageFS) writeFile(name string, r io.Reader, h *tar.Header) error {
	f, err := ifs.root.OpenFile(rel(name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return ifs.own(name, h)
}

func (ifs *imageFS) own(name string, h *tar.Header) error {
	if os.Geteuid() == 0 {
		if err := ifs.root.Lchown(rel(name), h.Uid, h.Gid); err != nil {
			return err
		}
	}
	return ifs.root.Chmod(rel(name), fs.FileMode(h.Mode).Perm()|specialBits(h.Mode))
}

func specialBits(mode int64) fs.FileMode {
	var m fs.FileMode
	if mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// fsVerifier checks an image's files for the user the image runs as.
type fsVerifier struct {
	fs       *imageFS
	uid, gid int
	add      func(format string, a ...any)
}

// can tells whether the image's user has all the permission bits (4 read,
// 2 write, 1 execute) on h.
func (v fsVerifier) can(h *tar.Header, bits int64) bool {
	switch {
	case h.Uid == v.uid:
		return h.Mode>>6&bits == bits
	case h.Gid == v.gid:
		return h.Mode>>3&bits == bits
	}
	return h.Mode&bits == bits
}

// reachable checks that the user can traverse every directory above p.
func (v fsVerifier) reachable(p string) bool {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if h, ok := v.fs.headers[d]; ok && !v.can(h, 1) {
			v.add("%s: directory %s (mode %o, owner %d) cannot be entered by user %d", p, d, h.Mode, h.Uid, v.uid)
			return false
		}
		if d == "/" {
			return true
		}
	}
}

func (v fsVerifier) regular(p string) (*tar.Header, bool) {
	h, ok := v.fs.headers[p]
	switch {
	case !ok:
		v.add("%s: not in the image", p)
		return nil, false
	case h.Typeflag != tar.TypeReg:
		v.add("%s: not a regular file", p)
		return nil, false
	}
	return h, v.reachable(p)
}

// binary checks that p is a static executable for arch that the user can
// run but not replace.
func (v fsVerifier) binary(p, arch string) bool {
	h, ok := v.regular(p)
	if !ok {
		return false
	}
	good := true
	if !v.can(h, 4|1) {
		v.add("%s (mode %o, owner %d): user %d cannot run it", p, h.Mode, h.Uid, v.uid)
		good = false
	}
	if v.can(h, 2) {
		v.add("%s (mode %o, owner %d): user %d could overwrite it", p, h.Mode, h.Uid, v.uid)
		good = false
	}
	f, err := v.fs.open(p)
	if err != nil {
		v.add("%s: %v", p, err)
		return false
	}
	defer func() { _ = f.Close() }()
	if err := staticELF(f, arch); err != nil {
		v.add("%s: %v", p, err)
		good = false
	}
	return good
}

var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "ppc64le": elf.EM_PPC64,
	"s390x": elf.EM_S390, "riscv64": elf.EM_RISCV, "arm": elf.EM_ARM, "386": elf.EM_386,
}

// staticELF checks that the file is an ELF executable for arch that needs
// no dynamic loader or shared library.
func staticELF(r io.ReaderAt, arch string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	if want, ok := elfMachines[arch]; ok && f.Machine != want {
		return fmt.Errorf("built for %v, but the image is for %s", f.Machine, arch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (it needs a loader, which distroless/static and scratch lack): build it with CGO_ENABLED=0")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %v: build it with CGO_ENABLED=0", libs)
	}
	return nil
}

// sameAs checks that the image's file p is readable by the user and holds
// what the repository's file src holds.
func (v fsVerifier) sameAs(p, src string) bool {
	h, ok := v.regular(p)
	if !ok {
		return false
	}
	if !v.can(h, 4) {
		v.add("%s (mode %o, owner %d): user %d cannot read it", p, h.Mode, h.Uid, v.uid)
		return false
	}
	want, err := os.ReadFile(src)
	if err != nil {
		v.add("%s: reading %s: %v", p, src, err)
		return false
	}
	got, err := v.fs.read(p)
	if err != nil {
		v.add("%s: %v", p, err)
		return false
	}
	if !bytes.Equal(want, got) {
		v.add("%s differs from %s", p, src)
		return false
	}
	return true
}

// chart checks that the image's directory dir holds every file of the
// chart directory src of the build context, readable, and returns how many.
func (v fsVerifier) chart(ctx *buildContext, dir, src string) int {
	if h, ok := v.fs.headers[dir]; !ok || h.Typeflag != tar.TypeDir {
		v.add("chart directory %s: not in the image", dir)
		return 0
	}
	n := 0
	root := filepath.Join(ctx.dir, filepath.FromSlash(src))
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if ctx.ignored(path.Join(src, filepath.ToSlash(rel))) {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			if h, ok := v.fs.headers[path.Join(dir, filepath.ToSlash(rel))]; ok && !v.can(h, 4|1) {
				v.add("%s (mode %o): user %d cannot list it", path.Join(dir, filepath.ToSlash(rel)), h.Mode, v.uid)
			}
			return nil
		}
		if v.sameAs(path.Join(dir, filepath.ToSlash(rel)), p) {
			n++
		}
		return nil
	})
	if err != nil {
		v.add("chart %s: %v", src, err)
	}
	if _, ok := v.fs.headers[path.Join(dir, "Chart.yaml")]; !ok {
		v.add("chart directory %s has no Chart.yaml", dir)
	}
	return n
}

// smokeRun runs the entrypoint with -help inside the image's filesystem,
// as the image's user, when this machine can: it proves that the binary
// starts with nothing but what the image holds.
func smokeRun(ifs *imageFS, cfg *v1.ConfigFile, workdir string, out io.Writer) error {
	if cfg.OS != runtime.GOOS || cfg.Architecture != runtime.GOARCH || len(cfg.Config.Entrypoint) == 0 {
		_, _ = fmt.Fprintf(out, "not running the entrypoint: the image is for %s/%s\n", cfg.OS, cfg.Architecture)
		return nil
	}
	uid, gid, err := configUser(cfg.Config.User)
	if err != nil {
		return err
	}
	argv := append(slices.Clone(cfg.Config.Entrypoint), "-help")
	var stdout, stderr bytes.Buffer
	how := fmt.Sprintf("chroot into the image's filesystem as user %d:%d", uid, gid)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = workdir, cfg.Config.Env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     ifs.dir,
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true},
		}
	}
	err = cmd.Run()
	if cmd.SysProcAttr != nil && errors.Is(err, syscall.EPERM) {
		cmd.SysProcAttr = nil
	}
	if cmd.SysProcAttr == nil {
		// Not root, or no right to chroot: run it in place as this user.
		how = "in place, as this process's user"
		stdout.Reset()
		stderr.Reset()
		cmd = exec.Command(ifs.path(argv[0]), argv[1:]...)
		cmd.Dir, cmd.Env = ifs.path(workdir), cfg.Config.Env
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
	}
	if err != nil {
		return fmt.Errorf("running %q (%s): %w: %s", argv, how, err, tail(stderr.String()))
	}
	if !strings.Contains(stdout.String()+stderr.String(), "-watches-file") {
		return fmt.Errorf("running %q (%s): its usage does not list -watches-file: %s", argv, how, tail(stderr.String()))
	}
	_, _ = fmt.Fprintf(out, "ran %q (%s): usage printed, exit 0\n", argv, how)
	return nil
}

func tail(s string) string {
	const most = 400
	if len(s) > most {
		return "..." + s[len(s)-most:]
	}
	return s
}

func verifyCommand(argv []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("imagecheck verify", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var rf repoFlags
	rf.register(fset)
	dir := fset.String("dir", "", "The OCI image layout to verify (default <root>/_output/oci/echo-operator).")
	smoke := fset.Bool("smoke", true, "Run the entrypoint with -help when the platform is this machine's.")
	anyPlatform := fset.Bool("any-platform", false, "Accept images of any platform (for multi-platform layouts).")
	if err := fset.Parse(argv); err != nil {
		return err
	}
	if *dir == "" {
		*dir = filepath.Join(rf.root, "_output", "oci", "echo-operator")
	}
	spec, err := rf.spec()
	if err != nil {
		return err
	}
	ctx, err := openContext(rf.root, rf.dockerfilePath())
	if err != nil {
		return err
	}
	labels, err := dockerfileLabels(rf)
	if err != nil {
		return err
	}
	o := verifyOptions{smoke: *smoke, labels: labels}
	if !*anyPlatform {
		p, err := rf.parsedPlatform()
		if err != nil {
			return err
		}
		o.platform = &p
	}
	if err := verifyLayout(*dir, ctx, spec, o, stdout); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "%s: ok\n", *dir)
	return nil
}

// dockerfileLabels returns the labels of the operator stage of the
// Dockerfile, expanded with the -build-arg values.
func dockerfileLabels(rf repoFlags) (map[string]string, error) {
	args, err := rf.args()
	if err != nil {
		return nil, err
	}
	p := rf.dockerfilePath()
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	df, err := parseDockerfile(displayName(rf.root, p), data)
	if err != nil {
		return nil, err
	}
	t, err := df.stageIndex(rf.target)
	if err != nil {
		return nil, err
	}
	return stageLabels(df, t, args)
}
