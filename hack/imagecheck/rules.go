package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// finding is one problem in a Dockerfile.
type finding struct {
	file string
	line int
	rule string
	msg  string
}

func (f finding) String() string {
	if f.line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", f.file, f.line, f.rule, f.msg)
	}
	return fmt.Sprintf("%s: %s: %s", f.file, f.rule, f.msg)
}

type report struct {
	file     string
	findings []finding
}

func (r *report) add(line int, rule, format string, a ...any) {
	f := finding{file: r.file, line: line, rule: rule, msg: fmt.Sprintf(format, a...)}
	if !slices.Contains(r.findings, f) { // a builder stage shared by two images is reported once
		r.findings = append(r.findings, f)
	}
}

// operatorSpec is what the operator image must hold, as the repository
// defines it.
type operatorSpec struct {
	target       string   // the operator's stage; empty for the last one
	managerPkg   string   // the manager's package (./cmd/manager)
	managerPath  string   // where the Deployment runs the manager from (/manager)
	uid          string   // the numeric user images run as (65532)
	watchesSrc   string   // context-relative path of watches.yaml
	watchesPath  string   // the manager's default --watches-file, relative to its working directory
	watches      []watch  // the entries of watches.yaml
	allowedBases []string // image name prefixes image stages may start from, besides scratch
}

// defaultBases are the bases image stages may use besides scratch: static,
// shell-less images.
var defaultBases = []string{"gcr.io/distroless/"}

// checkOperator applies the repository's rules to the operator Dockerfile.
func checkOperator(df *dockerfile, ctx *buildContext, spec operatorSpec) ([]finding, error) {
	r := &report{file: df.name}
	args := symbolicArgs()
	t, err := df.stageIndex(spec.target)
	if err != nil {
		r.add(0, "TargetStage", "%v", err)
		return r.findings, nil
	}
	if len(df.stages) < 2 {
		r.add(line(df.stages[0].Location), "MultiStage",
			"a single stage ships the Go toolchain: build in a builder stage and copy only the binary into a distroless or scratch stage")
	}
	if t != len(df.stages)-1 {
		r.add(line(df.stages[t].Location), "TargetIsLast",
			"stage %q is not the last one, so a plain `docker build .` does not build the operator", df.stages[t].Name)
	}
	if err := checkCopySources(r, df, ctx, args); err != nil {
		return nil, err
	}
	used := df.usedStages(args)
	var operator *goBuild
	for i := range df.stages {
		if used[i] && i != t {
			continue
		}
		b, err := checkImageStage(r, df, i, args, spec)
		if err != nil {
			return nil, err
		}
		if i == t {
			operator = b
		}
	}
	if err := checkOperatorStage(r, df, ctx, t, operator, spec); err != nil {
		return nil, err
	}
	return r.findings, nil
}

// checkCopySources flags COPY sources that the build context lacks or its
// ignore file excludes (BuildKit's CopyIgnoredFile needs a build client to
// read the ignore file, so it is applied here).
func checkCopySources(r *report, df *dockerfile, ctx *buildContext, args buildArgs) error {
	for i := range df.stages {
		ops, err := df.copies(i, args, ctx)
		if err != nil {
			return err
		}
		for _, op := range ops {
			if op.from >= 0 || op.image != "" {
				continue
			}
			for _, src := range op.sources {
				if ctx.pm != nil && !ctx.pm.Exclusions() && ctx.ignored(contextPath(src)) {
					r.add(op.line, "CopyIgnoredFile", "COPY %s: %s excludes it from the build context", src, ctx.ignoreFile)
				}
			}
			for _, src := range op.missing {
				if !ctx.ignored(contextPath(src)) {
					r.add(op.line, "CopySource", "COPY %s: not in the build context", src)
				}
			}
		}
	}
	return nil
}

// checkImageStage checks a stage that is an image of its own: its base, its
// user, its ENTRYPOINT and how the binary it runs is built. It returns that
// build, if it finds it.
func checkImageStage(r *report, df *dockerfile, i int, args buildArgs, spec operatorSpec) (*goBuild, error) {
	s := df.stages[i]
	name := stageName(df, i)
	base, err := df.baseImage(i, args)
	if err != nil {
		return nil, err
	}
	switch {
	case base == "":
		r.add(line(s.Location), "FinalBase",
			"stage %s builds FROM stage %s: start image stages FROM gcr.io/distroless/static:nonroot or scratch, so that no toolchain or shell ships", name, s.BaseName)
	case !allowedBase(base, spec.allowedBases):
		r.add(line(s.Location), "FinalBase",
			"stage %s starts FROM %s: use gcr.io/distroless/static:nonroot or scratch (static binary, no shell, no package manager)", name, base)
	}
	var entry *instructions.EntrypointCommand
	final, err := df.walk(i, args, func(cmd instructions.Command, _ state) error {
		if e, ok := cmd.(*instructions.EntrypointCommand); ok {
			entry = e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	checkUser(r, line(s.Location), name, final.user, spec.uid)
	if entry == nil {
		r.add(line(s.Location), "Entrypoint", "stage %s has no ENTRYPOINT", name)
		return nil, nil
	}
	if entry.PrependShell || len(entry.CmdLine) == 0 {
		r.add(line(entry.Location()), "Entrypoint",
			"use the JSON form: the shell form needs /bin/sh, which distroless and scratch lack")
		return nil, nil
	}
	bin := resolve(final.workdir, entry.CmdLine[0])
	b, err := binaryBuild(r, df, i, bin, line(entry.Location()), args)
	if err != nil || b == nil {
		return nil, err
	}
	checkBuild(r, df, *b, args)
	return b, nil
}

func stageName(df *dockerfile, i int) string {
	if df.stages[i].Name != "" {
		return strconv.Quote(df.stages[i].Name)
	}
	return strconv.Itoa(i)
}

func allowedBase(image string, prefixes []string) bool {
	if strings.EqualFold(image, "scratch") {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(image, p) {
			return true
		}
	}
	return false
}

func checkUser(r *report, line int, stage, user, uid string) {
	u, g, hasGroup := strings.Cut(user, ":")
	switch {
	case user == "":
		r.add(line, "NonRootUser", "stage %s sets no USER: add USER %s:%s, numeric, so that runAsNonRoot can verify it", stage, uid, uid)
	case u != uid:
		if _, err := strconv.Atoi(u); err != nil && u != "root" {
			r.add(line, "NonRootUser", "stage %s runs as USER %s, a name: the kubelet verifies runAsNonRoot only for a numeric user; use USER %s:%s", stage, user, uid, uid)
		} else {
			r.add(line, "NonRootUser", "stage %s runs as USER %s: use USER %s:%s (non-root, and the user the pods run as)", stage, user, uid, uid)
		}
	case hasGroup:
		if _, err := strconv.Atoi(g); err != nil {
			r.add(line, "NonRootUser", "stage %s runs as group %s, a name: use a numeric group (USER %s:%s)", stage, g, uid, uid)
		}
	}
}

// binaryBuild finds the go build that writes the binary bin of stage i: a
// COPY --from of a builder stage puts it there.
func binaryBuild(r *report, df *dockerfile, i int, bin string, entryLine int, args buildArgs) (*goBuild, error) {
	ops, err := df.copies(i, args, nil)
	if err != nil {
		return nil, err
	}
	for j := len(ops) - 1; j >= 0; j-- {
		op := ops[j]
		if op.from < 0 {
			continue
		}
		for _, src := range op.sources {
			if op.target(src) != bin {
				continue
			}
			builds, err := df.goBuilds(op.from, args)
			if err != nil {
				return nil, err
			}
			b, ok := producing(builds, resolve("/", src))
			if !ok {
				r.add(op.line, "StaticBinary", "no `go build -o %s` in stage %s builds the %s that this COPY takes", resolve("/", src), stageName(df, op.from), bin)
				return nil, nil
			}
			return &b, nil
		}
	}
	r.add(entryLine, "StaticBinary", "the ENTRYPOINT runs %s, which no COPY --from of a builder stage puts there", bin)
	return nil, nil
}

// checkBuild checks that a binary is built static and for the target
// platform, on the build platform.
func checkBuild(r *report, df *dockerfile, b goBuild, args buildArgs) {
	stage := stageName(df, b.stage)
	if v, ok := b.env["CGO_ENABLED"]; !ok {
		r.add(b.line, "StaticBinary", "%s is built without CGO_ENABLED=0: cgo is on wherever a C compiler is found (golang images have one), and the binary would need a libc that distroless/static and scratch lack", b.output)
	} else if v != "0" {
		r.add(b.line, "StaticBinary", "%s is built with CGO_ENABLED=%s: set CGO_ENABLED=0 so that it is static", b.output, v)
	}
	for _, p := range []struct{ env, arg string }{{"GOOS", "TARGETOS"}, {"GOARCH", "TARGETARCH"}} {
		v := b.env[p.env]
		if v == symbol(p.arg) {
			continue
		}
		hint := ""
		if _, declared := b.vars[p.arg]; !declared {
			hint = fmt.Sprintf(" and declare ARG %s in stage %s (an ARG before the first FROM is not in scope there)", p.arg, stage)
		}
		r.add(b.line, "MultiArch", "%s is built with %s=%q: set %s=${%s}%s, so that --platform picks what it is built for", b.output, p.env, v, p.env, p.arg, hint)
	}
	root := rootStage(df, b.stage)
	platform, err := df.expand(df.stages[root].Platform, df.globalScope(args))
	if err != nil || platform != symbol("BUILDPLATFORM") {
		r.add(line(df.stages[root].Location), "CrossCompile",
			"stage %s is pulled for the target platform, so a multi-platform build runs Go under emulation: start it FROM --platform=$BUILDPLATFORM and let GOOS/GOARCH cross-compile", stageName(df, root))
	}
}

// rootStage follows FROM <stage> to the stage that starts from an image.
func rootStage(df *dockerfile, i int) int {
	for {
		b := df.stageRef(df.stages[i].BaseName, i)
		if b < 0 {
			return i
		}
		i = b
	}
}

// stageContextFiles returns what COPYs from the build context put into stage
// i (and the stages it builds FROM) before line before (0: all).
func stageContextFiles(df *dockerfile, ctx *buildContext, i, before int, args buildArgs) (map[string]file, error) {
	files := map[string]file{}
	if b := df.stageRef(df.stages[i].BaseName, i); b >= 0 {
		parent, err := stageContextFiles(df, ctx, b, 0, args)
		if err != nil {
			return nil, err
		}
		files = parent
	}
	ops, err := df.copies(i, args, ctx)
	if err != nil {
		return nil, err
	}
	for p, f := range contextFiles(ops, before) {
		files[p] = f
	}
	return files, nil
}

func summarize(paths []string) string {
	const most = 4
	if len(paths) <= most {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:most], ", "), len(paths)-most)
}

// checkOperatorStage checks what the operator image holds: the manager, at
// the path the Deployment runs, and watches.yaml and the charts where the
// manager reads them.
func checkOperatorStage(r *report, df *dockerfile, ctx *buildContext, t int, manager *goBuild, spec operatorSpec) error {
	args := symbolicArgs()
	s := df.stages[t]
	final, err := df.walk(t, args, nil)
	if err != nil {
		return err
	}
	if manager != nil {
		if path.Clean(manager.pkg) != path.Clean(spec.managerPkg) {
			r.add(line(s.Location), "Entrypoint", "the operator image runs a binary built from %s, not the manager (%s)", manager.pkg, spec.managerPkg)
		}
	}
	var entry []string
	for _, cmd := range s.Commands {
		if e, ok := cmd.(*instructions.EntrypointCommand); ok && !e.PrependShell {
			entry = e.CmdLine
		}
	}
	if len(entry) > 0 && resolve(final.workdir, entry[0]) != spec.managerPath {
		r.add(line(s.Location), "Entrypoint", "the ENTRYPOINT runs %s, but the manager's Deployment runs %s", entry[0], spec.managerPath)
	}
	files, err := stageContextFiles(df, ctx, t, 0, args)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(spec.uid)
	watchesAt := resolve(final.workdir, spec.watchesPath)
	if f, ok := files[watchesAt]; !ok || f.src != spec.watchesSrc {
		r.add(line(s.Location), "WatchesFile",
			"the manager reads %s (--watches-file %q in its working directory %s): COPY %s there", watchesAt, spec.watchesPath, final.workdir, spec.watchesSrc)
	} else if !readable(f, uid) {
		r.add(line(s.Location), "Readable", "%s (mode %v, owner %d) is not readable by user %d", watchesAt, f.mode, f.uid, uid)
	}
	for _, w := range spec.watches {
		if err := checkChart(r, ctx, line(s.Location), files, final.workdir, w.Chart, uid); err != nil {
			return err
		}
	}
	return nil
}

// checkChart checks that every file of the chart's directory in the build
// context is in the image where the manager resolves the chart path.
func checkChart(r *report, ctx *buildContext, at int, files map[string]file, workdir, chart string, uid int) error {
	if path.IsAbs(chart) {
		r.add(at, "ChartPath", "chart %s is absolute: keep chart paths in watches.yaml relative, so that the same file serves the repository and the image", chart)
		return nil
	}
	src := contextPath(chart)
	dir := filepath.Join(ctx.dir, filepath.FromSlash(src))
	if info, err := ctx.stat(src); err != nil || !info.IsDir() {
		r.add(at, "Charts", "watches.yaml names chart %s, which is no directory of the build context", chart)
		return nil
	}
	imageDir := resolve(workdir, chart)
	var missing, unreadable []string
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		want := path.Join(imageDir, rel)
		f, ok := files[want]
		switch {
		case !ok || f.src != path.Join(src, rel):
			m := path.Join(src, rel)
			if ctx.ignored(m) {
				m += fmt.Sprintf(" (%s excludes it)", ctx.ignoreFile)
			}
			missing = append(missing, m)
		case !readable(f, uid):
			unreadable = append(unreadable, fmt.Sprintf("%s (mode %v)", want, f.mode))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		r.add(at, "Charts", "the manager renders chart %s from %s, which lacks %s", chart, imageDir, summarize(missing))
	}
	if len(unreadable) > 0 {
		r.add(at, "Readable", "not readable by user %d: %s", uid, summarize(unreadable))
	}
	return nil
}

func (c *buildContext) stat(rel string) (fs.FileInfo, error) {
	return os.Stat(filepath.Join(c.dir, filepath.FromSlash(rel)))
}

// readable tells whether user uid (not root, in no group of the file) can
// read the file, and enter it if it is a directory.
func readable(f file, uid int) bool {
	perm := f.mode.Perm()
	need := fs.FileMode(0o4)
	if f.mode.IsDir() {
		need = 0o5
	}
	if f.uid == uid {
		need <<= 6
	}
	return f.mode&fs.ModeSymlink != 0 || perm&need == need
}
