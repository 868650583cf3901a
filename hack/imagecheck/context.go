package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// buildContext is the directory a build sends, filtered by its ignore file.
type buildContext struct {
	dir        string
	ignoreFile string // context-relative; empty when there is none
	pm         *patternmatcher.PatternMatcher
}

// openContext opens dir as the build context of the Dockerfile at
// dockerfile. Like BuildKit, it reads <Dockerfile>.dockerignore next to the
// Dockerfile when there is one, and .dockerignore at the context's root
// otherwise.
func openContext(dir, dockerfile string) (*buildContext, error) {
	c := &buildContext{dir: dir}
	for _, p := range []string{dockerfile + ".dockerignore", filepath.Join(dir, ".dockerignore")} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		patterns, err := ignorefile.ReadAll(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if c.pm, err = patternmatcher.New(patterns); err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if rel, err := filepath.Rel(dir, p); err == nil {
			c.ignoreFile = filepath.ToSlash(rel)
		} else {
			c.ignoreFile = p
		}
		break
	}
	return c, nil
}

// ignored tells whether the ignore file keeps the context-relative path rel
// (or a parent of it) out of the build.
func (c *buildContext) ignored(rel string) bool {
	if c.pm == nil {
		return false
	}
	ok, err := c.pm.MatchesOrParentMatches(filepath.FromSlash(rel))
	return err == nil && ok
}

// file is one entry that a COPY from the build context puts into a stage.
type file struct {
	image string // absolute path in the stage
	src   string // context-relative path
	mode  fs.FileMode
	uid   int
	gid   int
	link  string // symlink target
}

// copyOp is one COPY of a stage, expanded.
type copyOp struct {
	cmd     *instructions.CopyCommand
	line    int
	from    int    // the stage copied from; -1 for the build context or an image
	image   string // the image copied from, if any
	sources []string
	dest    string // absolute
	destDir bool
	chmod   *fs.FileMode
	uid     int
	gid     int
	st      state
	files   []file // what a COPY from the build context puts into the stage
	missing []string
}

// target returns where the COPY puts source src (a file, or the contents of
// a directory).
func (op *copyOp) target(src string) string {
	if op.destDir {
		return path.Join(op.dest, path.Base(src))
	}
	return op.dest
}

// copies returns the COPYs of stage i with the files each one takes from
// ctx (nil: list no files).
func (d *dockerfile) copies(i int, args buildArgs, ctx *buildContext) ([]copyOp, error) {
	var ops []copyOp
	global := d.globalScope(args)
	_, err := d.walk(i, args, func(cmd instructions.Command, st state) error {
		c, ok := cmd.(*instructions.CopyCommand)
		if !ok {
			return nil
		}
		op, err := d.copyOp(i, c, st, global)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", d.name, line(c.Location()), err)
		}
		if op.from < 0 && op.image == "" && ctx != nil {
			if err := ctx.resolveCopy(&op); err != nil {
				return fmt.Errorf("%s:%d: %w", d.name, op.line, err)
			}
		}
		ops = append(ops, op)
		return nil
	})
	return ops, err
}

func (d *dockerfile) copyOp(i int, c *instructions.CopyCommand, st state, global env) (copyOp, error) {
	op := copyOp{cmd: c, line: line(c.Location()), from: -1, st: st, uid: 0, gid: 0}
	if len(c.SourceContents) > 0 || c.Parents || len(c.ExcludePatterns) > 0 {
		return op, fmt.Errorf("COPY with heredocs, --parents or --exclude is not supported by this check")
	}
	if c.From != "" {
		from, err := d.expand(c.From, global)
		if err != nil {
			return op, err
		}
		if op.from = d.stageRef(from, i); op.from < 0 {
			op.image = from
		}
	}
	for _, s := range c.SourcePaths {
		v, err := d.expand(s, st.vars)
		if err != nil {
			return op, err
		}
		op.sources = append(op.sources, v)
	}
	dest, err := d.expand(c.DestPath, st.vars)
	if err != nil {
		return op, err
	}
	op.destDir = strings.HasSuffix(dest, "/") || len(op.sources) > 1 || hasGlob(op.sources)
	op.dest = resolve(st.workdir, dest)
	if c.Chmod != "" {
		m, err := strconv.ParseUint(c.Chmod, 8, 32)
		if err != nil {
			return op, fmt.Errorf("COPY --chmod=%s: only octal modes are supported by this check", c.Chmod)
		}
		mode := fs.FileMode(m)
		op.chmod = &mode
	}
	if c.Chown != "" {
		u, g, err := numericOwner(c.Chown)
		if err != nil {
			return op, err
		}
		op.uid, op.gid = u, g
	}
	return op, nil
}

func numericOwner(s string) (int, int, error) {
	us, gs, hasGroup := strings.Cut(s, ":")
	u, err := strconv.Atoi(us)
	if err != nil {
		return 0, 0, fmt.Errorf("--chown=%s: only numeric owners are supported (the image has no /etc/passwd to look names up in at build time)", s)
	}
	g := u
	if hasGroup {
		if g, err = strconv.Atoi(gs); err != nil {
			return 0, 0, fmt.Errorf("--chown=%s: only numeric groups are supported", s)
		}
	}
	return u, g, nil
}

func hasGlob(srcs []string) bool {
	for _, s := range srcs {
		if strings.ContainsAny(s, "*?[") {
			return true
		}
	}
	return false
}

// contextPath cleans a COPY source into a context-relative path.
func contextPath(src string) string {
	p := path.Clean("/" + filepath.ToSlash(src))
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// resolveCopy lists the files a COPY takes from the context, as a build
// would send them: what the ignore file excludes is not there.
func (c *buildContext) resolveCopy(op *copyOp) error {
	for _, src := range op.sources {
		matches := []string{contextPath(src)}
		if strings.ContainsAny(src, "*?[") {
			found, err := filepath.Glob(filepath.Join(c.dir, filepath.FromSlash(contextPath(src))))
			if err != nil {
				return err
			}
			matches = matches[:0]
			for _, m := range found {
				rel, _ := filepath.Rel(c.dir, m)
				matches = append(matches, filepath.ToSlash(rel))
			}
		}
		n := len(op.files)
		for _, rel := range matches {
			if err := c.addSource(op, rel); err != nil {
				return err
			}
		}
		if len(op.files) == n {
			op.missing = append(op.missing, src)
		}
	}
	return nil
}

func (c *buildContext) addSource(op *copyOp, rel string) error {
	if c.ignored(rel) && (c.pm == nil || !c.pm.Exclusions()) {
		return nil
	}
	root := filepath.Join(c.dir, filepath.FromSlash(rel))
	info, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if !c.ignored(rel) {
			op.files = append(op.files, c.entry(op, rel, op.target(rel), info))
		}
		return nil
	}
	// A directory: its contents go into the destination, which is created.
	op.files = append(op.files, c.entry(op, rel, op.dest, info))
	return filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		r, _ := filepath.Rel(c.dir, p)
		r = filepath.ToSlash(r)
		if c.ignored(r) {
			if de.IsDir() && !c.pm.Exclusions() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		inner, _ := filepath.Rel(root, p)
		op.files = append(op.files, c.entry(op, r, path.Join(op.dest, filepath.ToSlash(inner)), info))
		return nil
	})
}

func (c *buildContext) entry(op *copyOp, rel, image string, info fs.FileInfo) file {
	f := file{image: image, src: rel, mode: info.Mode(), uid: op.uid, gid: op.gid}
	if info.Mode()&fs.ModeSymlink != 0 {
		f.link, _ = os.Readlink(filepath.Join(c.dir, filepath.FromSlash(rel)))
	} else if op.chmod != nil {
		f.mode = f.mode&fs.ModeType | *op.chmod
	}
	return f
}

// contextFiles maps the image paths of stage i that come from the build
// context to their entries, as the stage stands before line before (0: at
// its end).
func contextFiles(ops []copyOp, before int) map[string]file {
	files := map[string]file{}
	for _, op := range ops {
		if before > 0 && op.line >= before {
			break
		}
		for _, f := range op.files {
			files[f.image] = f
		}
	}
	return files
}
