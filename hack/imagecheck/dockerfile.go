package main

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// dockerfile is a Dockerfile parsed by BuildKit's parser into stages.
type dockerfile struct {
	name     string // as shown in findings
	data     []byte
	stages   []instructions.Stage
	metaArgs []instructions.ArgCommand
	lex      *shell.Lex
}

func parseDockerfile(name string, data []byte) (*dockerfile, error) {
	ast, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	stages, metaArgs, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing the instructions of %s: %w", name, err)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s has no FROM", name)
	}
	return &dockerfile{name: name, data: data, stages: stages, metaArgs: metaArgs, lex: shell.NewLex(ast.EscapeToken)}, nil
}

// stageIndex returns the index of the stage named name (case-insensitive, as
// BuildKit compares them), or of the last stage when name is empty.
func (d *dockerfile) stageIndex(name string) (int, error) {
	if name == "" {
		return len(d.stages) - 1, nil
	}
	for i, s := range d.stages {
		if strings.EqualFold(s.Name, name) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%s has no stage %q", d.name, name)
}

// stageRef resolves what FROM or COPY --from names: a stage index, or -1
// for an image.
func (d *dockerfile) stageRef(ref string, before int) int {
	for i := range before {
		if d.stages[i].Name != "" && strings.EqualFold(d.stages[i].Name, ref) {
			return i
		}
	}
	if n, err := parseIndex(ref); err == nil && n < before {
		return n
	}
	return -1
}

func parseIndex(s string) (int, error) {
	var n int
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// line is the first line of a command, for findings.
func line(r []parser.Range) int {
	if len(r) == 0 {
		return 0
	}
	return r[0].Start.Line
}

// buildArgs are the values given to ARGs, like docker build --build-arg,
// including the automatic platform ARGs (TARGETOS, TARGETARCH, ...).
type buildArgs map[string]string

// symbolicArgs gives every automatic platform ARG a value that names it, so
// that an expanded word shows which ARG it came from: GOARCH=${TARGETARCH}
// expands to GOARCH=<TARGETARCH> only where TARGETARCH is declared.
func symbolicArgs() buildArgs {
	args := buildArgs{}
	for _, k := range []string{"TARGETPLATFORM", "TARGETOS", "TARGETARCH", "TARGETVARIANT", "BUILDPLATFORM", "BUILDOS", "BUILDARCH", "BUILDVARIANT"} {
		args[k] = symbol(k)
	}
	return args
}

func symbol(arg string) string { return "<" + arg + ">" }

// env is a variable scope, as BuildKit's shell lexer reads it.
type env map[string]string

func (e env) Get(k string) (string, bool) { v, ok := e[k]; return v, ok }
func (e env) Keys() []string              { return slices.Sorted(maps.Keys(e)) }

func (d *dockerfile) expand(word string, scope env) (string, error) {
	out, _, err := d.lex.ProcessWord(word, scope)
	return out, err
}

// globalScope is the scope of FROM lines: the ARGs before the first FROM
// and the automatic platform ARGs.
func (d *dockerfile) globalScope(args buildArgs) env {
	scope := env{}
	for k, v := range args {
		if isPlatformArg(k) {
			scope[k] = v
		}
	}
	for _, a := range d.metaArgs {
		for _, kv := range a.Args {
			if v, ok := args[kv.Key]; ok {
				scope[kv.Key] = v
			} else if kv.Value != nil {
				v, err := d.expand(*kv.Value, scope)
				if err == nil {
					scope[kv.Key] = v
				}
			}
		}
	}
	return scope
}

func isPlatformArg(k string) bool {
	return strings.HasPrefix(k, "TARGET") || strings.HasPrefix(k, "BUILD")
}

// state is what a stage has accumulated before one of its commands.
type state struct {
	workdir string
	vars    env // ARGs declared in the stage and ENVs, expanded
	envs    env // ENVs only (what a RUN and the image inherit)
	user    string
}

// walk calls visit for every command of stage i with the state before it.
// A stage built FROM another stage starts from that stage's working
// directory, ENVs and USER.
func (d *dockerfile) walk(i int, args buildArgs, visit func(cmd instructions.Command, st state) error) (state, error) {
	st := state{workdir: "/", vars: env{}, envs: env{}}
	if base := d.stageRef(d.stages[i].BaseName, i); base >= 0 {
		parent, err := d.walk(base, args, nil)
		if err != nil {
			return st, err
		}
		st.workdir, st.user = parent.workdir, parent.user
		maps.Copy(st.envs, parent.envs)
		maps.Copy(st.vars, parent.envs)
	}
	global := d.globalScope(args)
	for _, cmd := range d.stages[i].Commands {
		if visit != nil {
			snapshot := state{workdir: st.workdir, vars: maps.Clone(st.vars), envs: maps.Clone(st.envs), user: st.user}
			if err := visit(cmd, snapshot); err != nil {
				return st, err
			}
		}
		if err := d.apply(cmd, &st, args, global); err != nil {
			return st, fmt.Errorf("%s:%d: %w", d.name, line(cmd.Location()), err)
		}
	}
	return st, nil
}

func (d *dockerfile) apply(cmd instructions.Command, st *state, args buildArgs, global env) error {
	switch c := cmd.(type) {
	case *instructions.ArgCommand:
		for _, kv := range c.Args {
			switch v, ok := args[kv.Key]; {
			case ok:
				st.vars[kv.Key] = v
			case kv.Value != nil:
				v, err := d.expand(*kv.Value, st.vars)
				if err != nil {
					return err
				}
				st.vars[kv.Key] = v
			default:
				if v, ok := global[kv.Key]; ok {
					st.vars[kv.Key] = v
				}
			}
		}
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			v, err := d.expand(kv.Value, st.vars)
			if err != nil {
				return err
			}
			st.vars[kv.Key], st.envs[kv.Key] = v, v
		}
	case *instructions.WorkdirCommand:
		p, err := d.expand(c.Path, st.vars)
		if err != nil {
			return err
		}
		st.workdir = resolve(st.workdir, p)
	case *instructions.UserCommand:
		u, err := d.expand(c.User, st.vars)
		if err != nil {
			return err
		}
		st.user = u
	}
	return nil
}

// resolve makes p absolute against dir and cleans it.
func resolve(dir, p string) string {
	if !path.IsAbs(p) {
		p = path.Join(dir, p)
	}
	return path.Clean(p)
}

// baseImage is the image a stage starts from, expanded; empty when the stage
// is built FROM another stage.
func (d *dockerfile) baseImage(i int, args buildArgs) (string, error) {
	s := d.stages[i]
	name, err := d.expand(s.BaseName, d.globalScope(args))
	if err != nil {
		return "", err
	}
	if d.stageRef(name, i) >= 0 {
		return "", nil
	}
	return name, nil
}

// usedStages returns the stages that other stages build FROM or COPY --from.
func (d *dockerfile) usedStages(args buildArgs) map[int]bool {
	used := map[int]bool{}
	for i, s := range d.stages {
		if b := d.stageRef(s.BaseName, i); b >= 0 {
			used[b] = true
		}
		for _, cmd := range s.Commands {
			if c, ok := cmd.(*instructions.CopyCommand); ok && c.From != "" {
				from, _ := d.expand(c.From, d.globalScope(args))
				if b := d.stageRef(from, i); b >= 0 {
					used[b] = true
				}
			}
		}
	}
	return used
}
