package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
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
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
)

// The layout is assembled FROM scratch: the Dockerfile's base,
// gcr.io/distroless/static:nonroot, cannot be pulled without a registry.
// What distroless adds (/etc/passwd with the nonroot user, /tmp, CA
// certificates, PATH and SSL_CERT_FILE) is therefore missing from it; the
// files the Dockerfile copies, the user, the entrypoint and the labels are
// the same.

// baseNote is recorded in the layout's history and annotations.
const baseNote = "scratch, standing in for the Dockerfile's base, which is not pulled"

// binaryBuilder builds the Go binary that a go build of the Dockerfile
// describes (its GOOS and GOARCH included) into the file out.
type binaryBuilder func(b goBuild, out string) error

// layoutOptions describe one layout to assemble.
type layoutOptions struct {
	root     string // the build context and module root
	platform ocispecs.Platform
	args     buildArgs // --build-arg values
	ref      string    // full image reference, recorded as annotations
	epoch    time.Time // the time of every file and of the image
	build    binaryBuilder
}

// assembleImage builds the image of stage t of the Dockerfile as a scratch
// image: one layer per COPY (the files from the build context, or the Go
// binary a builder stage builds), and the configuration its ENV, WORKDIR,
// USER, LABEL, EXPOSE, ENTRYPOINT, CMD and STOPSIGNAL instructions set.
func assembleImage(df *dockerfile, ctx *buildContext, t int, o layoutOptions, tmp string) (v1.Image, error) {
	args := platformArgs(o.platform.OS, o.platform.Architecture)
	for k, v := range o.args {
		args[k] = v
	}
	if df.stageRef(df.stages[t].BaseName, t) >= 0 {
		return nil, fmt.Errorf("stage %s builds FROM another stage, which the layout does not model", stageName(df, t))
	}
	ops, err := df.copies(t, args, ctx)
	if err != nil {
		return nil, err
	}
	cfg := v1.Config{Labels: map[string]string{}}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	history := []v1.History{{Created: v1.Time{Time: o.epoch}, CreatedBy: "FROM " + baseNote, EmptyLayer: true}}
	var adds []mutate.Addendum
	next := 0
	final, err := df.walk(t, args, func(cmd instructions.Command, st state) error {
		var layer v1.Layer
		var err error
		switch c := cmd.(type) {
		case *instructions.CopyCommand:
			op := ops[next]
			next++
			layer, err = copyLayer(df, op, o, args, tmp)
		case *instructions.LabelCommand:
			err = expandPairs(df, c.Labels, st.vars, cfg.Labels)
		case *instructions.ExposeCommand:
			err = expose(df, c.Ports, st.vars, &cfg)
		case *instructions.EntrypointCommand:
			cfg.Entrypoint = execForm(c.ShellDependantCmdLine)
			cfg.Cmd = nil // as in a build: a new ENTRYPOINT resets CMD
		case *instructions.CmdCommand:
			cfg.Cmd = execForm(c.ShellDependantCmdLine)
		case *instructions.StopSignalCommand:
			cfg.StopSignal, err = df.expand(c.Signal, st.vars)
		case *instructions.ArgCommand, *instructions.EnvCommand, *instructions.WorkdirCommand, *instructions.UserCommand:
			// The walk keeps them; they end up in the configuration below.
		default:
			err = fmt.Errorf("%s is not supported in the image stage by the layout (there is no shell to RUN in)", strings.ToUpper(cmd.Name()))
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", df.name, line(cmd.Location()), err)
		}
		if layer != nil {
			adds = append(adds, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
		}
		if _, isArg := cmd.(*instructions.ArgCommand); !isArg {
			history = append(history, v1.History{Created: v1.Time{Time: o.epoch}, CreatedBy: commandText(cmd), EmptyLayer: layer == nil})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		return nil, err
	}
	cfgFile, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfgFile = cfgFile.DeepCopy()
	cfgFile.History = history // in the Dockerfile's order, one entry per layer or empty-layer instruction
	cfgFile.Created = v1.Time{Time: o.epoch}
	cfgFile.OS, cfgFile.Architecture, cfgFile.Variant = o.platform.OS, o.platform.Architecture, o.platform.Variant
	cfg.User, cfg.WorkingDir = final.user, final.workdir
	for _, k := range slices.Sorted(maps.Keys(final.envs)) {
		cfg.Env = append(cfg.Env, k+"="+final.envs[k])
	}
	cfgFile.Config = cfg
	return mutate.ConfigFile(img, cfgFile)
}

func commandText(cmd instructions.Command) string {
	if s, ok := cmd.(fmt.Stringer); ok {
		return s.String()
	}
	return strings.ToUpper(cmd.Name())
}

// execForm is what a build records for ENTRYPOINT or CMD.
func execForm(c instructions.ShellDependantCmdLine) []string {
	if c.PrependShell {
		return []string{"/bin/sh", "-c", strings.Join(c.CmdLine, " ")}
	}
	return slices.Clone(c.CmdLine)
}

func expandPairs(df *dockerfile, kvs instructions.KeyValuePairs, scope env, into map[string]string) error {
	for _, kv := range kvs {
		k, err := df.expand(kv.Key, scope)
		if err != nil {
			return err
		}
		v, err := df.expand(kv.Value, scope)
		if err != nil {
			return err
		}
		into[k] = v
	}
	return nil
}

func expose(df *dockerfile, ports []string, scope env, cfg *v1.Config) error {
	for _, p := range ports {
		v, err := df.expand(p, scope)
		if err != nil {
			return err
		}
		if !strings.Contains(v, "/") {
			v += "/tcp"
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = map[string]struct{}{}
		}
		cfg.ExposedPorts[strings.ToLower(v)] = struct{}{}
	}
	return nil
}

// copyLayer makes the layer of one COPY: files from the build context, or
// binaries that go builds of a builder stage produce.
func copyLayer(df *dockerfile, op copyOp, o layoutOptions, args buildArgs, tmp string) (v1.Layer, error) {
	var w layerWriter
	switch {
	case op.image != "":
		return nil, fmt.Errorf("COPY --from=%s: copying from an image needs a registry", op.image)
	case op.from >= 0:
		builds, err := df.goBuilds(op.from, args)
		if err != nil {
			return nil, err
		}
		for _, src := range op.sources {
			b, ok := producing(builds, resolve("/", src))
			if !ok {
				return nil, fmt.Errorf("COPY --from=%s %s: no go build in that stage writes it", op.cmd.From, src)
			}
			out := filepath.Join(tmp, fmt.Sprintf("stage%d-%s", b.stage, path.Base(b.output)))
			if err := o.build(b, out); err != nil {
				return nil, err
			}
			info, err := os.Stat(out)
			if err != nil {
				return nil, err
			}
			mode := info.Mode()
			if op.chmod != nil {
				mode = *op.chmod
			}
			if err := w.addFile(op.target(src), out, mode, op.uid, op.gid, o.epoch); err != nil {
				return nil, err
			}
		}
	default:
		if len(op.missing) > 0 {
			return nil, fmt.Errorf("COPY %s: not in the build context", strings.Join(op.missing, " "))
		}
		for _, f := range op.files {
			if err := w.addContextFile(f, filepath.Join(o.root, filepath.FromSlash(f.src)), o.epoch); err != nil {
				return nil, err
			}
		}
	}
	return w.layer()
}

// layerWriter writes a layer's tar, adding the parent directories of what
// it holds.
type layerWriter struct {
	buf  bytes.Buffer
	tw   *tar.Writer
	dirs map[string]bool
}

func (w *layerWriter) header(h *tar.Header) error {
	if w.tw == nil {
		w.tw = tar.NewWriter(&w.buf)
		w.dirs = map[string]bool{}
	}
	name := strings.TrimPrefix(path.Clean(h.Name), "/")
	if name == "" || name == "." {
		return nil // the root directory is the base's
	}
	if err := w.parents(path.Dir(name), h.ModTime); err != nil {
		return err
	}
	h.Name = name
	if h.Typeflag == tar.TypeDir {
		if w.dirs[name] {
			return nil
		}
		w.dirs[name] = true
		h.Name += "/"
	}
	h.Format = tar.FormatPAX
	return w.tw.WriteHeader(h)
}

func (w *layerWriter) parents(dir string, mtime time.Time) error {
	if dir == "." || dir == "/" || w.dirs[dir] {
		return nil
	}
	if err := w.parents(path.Dir(dir), mtime); err != nil {
		return err
	}
	w.dirs[dir] = true
	return w.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
}

func (w *layerWriter) addContextFile(f file, src string, mtime time.Time) error {
	h := &tar.Header{Name: f.image, Mode: int64(unixMode(f.mode)), Uid: f.uid, Gid: f.gid, ModTime: mtime}
	switch {
	case f.mode.IsDir():
		h.Typeflag = tar.TypeDir
		return w.header(h)
	case f.mode&fs.ModeSymlink != 0:
		h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		return w.header(h)
	case f.mode.IsRegular():
		return w.addFile(f.image, src, f.mode, f.uid, f.gid, mtime)
	}
	return fmt.Errorf("%s: %v files cannot be copied into an image", f.src, f.mode.Type())
}

func (w *layerWriter) addFile(name, src string, mode fs.FileMode, uid, gid int, mtime time.Time) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(unixMode(mode)), Uid: uid, Gid: gid, Size: int64(len(data)), ModTime: mtime}
	if err := w.header(h); err != nil {
		return err
	}
	_, err = w.tw.Write(data)
	return err
}

// unixMode converts permission and special bits to the tar mode.
func unixMode(m fs.FileMode) fs.FileMode {
	u := m.Perm()
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

func (w *layerWriter) layer() (v1.Layer, error) {
	if w.tw == nil {
		w.tw = tar.NewWriter(&w.buf)
	}
	if err := w.tw.Close(); err != nil {
		return nil, err
	}
	data := w.buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching)
}

// goBuildBinary runs a go build of the Dockerfile in the module at root,
// with the build's environment and flags. The build context
// holds no .git, so builds in the Dockerfile carry no VCS stamp; neither
// does this one.
func goBuildBinary(root string, stdout io.Writer) binaryBuilder {
	return func(b goBuild, out string) error {
		if path.IsAbs(b.pkg) {
			return fmt.Errorf("go build %s: an absolute package path cannot be built from the repository", b.pkg)
		}
		argv := append([]string{"build"}, b.flags...)
		argv = append(argv, "-o", out, "./"+path.Clean(b.pkg))
		cmd := exec.Command("go", argv...)
		cmd.Dir = root
		cmd.Env = buildEnv(os.Environ(), b.env)
		cmd.Stdout, cmd.Stderr = stdout, stdout
		_, _ = fmt.Fprintf(stdout, "building %s: %s go %s\n", b.output, shellQuote(envList(b.env)), shellQuote(argv))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build of %s: %w", b.pkg, err)
		}
		return nil
	}
}

// buildEnv is the environment of a go build: the host's, without what
// changes what go builds (the builder stage sets none of it), and the
// build's own.
func buildEnv(host []string, own map[string]string) []string {
	var env []string
	for _, kv := range host {
		k, _, _ := strings.Cut(kv, "=")
		if !buildVars[k] && !strings.HasPrefix(k, "CGO_") && !strings.HasPrefix(k, "GOARM") && !strings.HasPrefix(k, "GOMIPS") {
			env = append(env, kv)
		}
	}
	return append(env, envList(own)...)
}

var buildVars = map[string]bool{
	"GOOS": true, "GOARCH": true, "GOFLAGS": true, "GOEXPERIMENT": true, "GOFIPS140": true,
	"GOAMD64": true, "GO386": true, "GOPPC64": true, "GORISCV64": true, "GOWASM": true, "GOTOOLDIR": true,
}

func envList(own map[string]string) []string {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(own)) {
		env = append(env, k+"="+own[k])
	}
	if _, ok := own["GOFLAGS"]; !ok {
		env = append(env, "GOFLAGS=-buildvcs=false")
	}
	return env
}

// writeLayout writes img as the only image of an OCI image layout at dir,
// replacing a layout there.
func writeLayout(dir string, img v1.Image, ref string) (v1.Hash, error) {
	if err := clearLayout(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	annotations := map[string]string{"org.opencontainers.image.base.name": "scratch"}
	if ref != "" {
		annotations["io.containerd.image.name"] = ref
		annotations[ocispecs.AnnotationRefName] = tagOf(ref)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// tagOf returns the tag of an image reference (latest without one).
func tagOf(ref string) string {
	name := ref[strings.LastIndex(ref, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok {
		return tag
	}
	return "latest"
}

// clearLayout removes the OCI layout at dir; it refuses to remove anything
// else.
func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(entries) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s exists and is no OCI image layout: not replacing it", dir)
	}
	return os.RemoveAll(dir)
}

func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", v, err)
	}
	return time.Unix(s, 0).UTC(), nil
}

func layoutCommand(argv []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("imagecheck layout", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var rf repoFlags
	rf.register(fset)
	out := fset.String("out", "", "The OCI image layout to write (default <root>/_output/oci/echo-operator).")
	ref := fset.String("image", "", "The image reference recorded in the layout's annotations.")
	smoke := fset.Bool("smoke", true, "Run the manager from the layout with -help when the platform is this machine's.")
	if err := fset.Parse(argv); err != nil {
		return err
	}
	start := time.Now()
	if *out == "" {
		*out = filepath.Join(rf.root, "_output", "oci", "echo-operator")
	}
	platform, err := rf.parsedPlatform()
	if err != nil {
		return err
	}
	args, err := rf.args()
	if err != nil {
		return err
	}
	epoch, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	path := rf.dockerfilePath()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	df, err := parseDockerfile(displayName(rf.root, path), data)
	if err != nil {
		return err
	}
	t, err := df.stageIndex(rf.target)
	if err != nil {
		return err
	}
	ctx, err := openContext(rf.root, path)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "imagecheck-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	img, err := assembleImage(df, ctx, t, layoutOptions{
		root: rf.root, platform: platform, args: args, ref: *ref, epoch: epoch, build: goBuildBinary(rf.root, stdout),
	}, tmp)
	if err != nil {
		return err
	}
	digest, err := writeLayout(*out, img, *ref)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "wrote %s: %s %s (FROM %s)\n", *out, platform.OS+"/"+platform.Architecture, digest, baseNote)
	spec, err := rf.spec()
	if err != nil {
		return err
	}
	labels, err := stageLabels(df, t, args)
	if err != nil {
		return err
	}
	if err := verifyLayout(*out, ctx, spec, verifyOptions{platform: &platform, labels: labels, smoke: *smoke}, stdout); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "layout built and verified in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// shellQuote joins words into a command line a shell would split back.
func shellQuote(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		quoted[i] = w
	}
	return strings.Join(quoted, " ")
}
