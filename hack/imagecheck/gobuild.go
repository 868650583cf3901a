package main

import (
	"fmt"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// goBuild is a `go build` that a RUN of a stage runs.
type goBuild struct {
	stage   int
	line    int
	workdir string
	vars    env               // the ARGs and ENVs in scope
	env     map[string]string // the stage's ENVs and the command's own assignments
	flags   []string          // go build flags, without -o
	output  string            // absolute path in the stage
	pkg     string            // the package built, as written (./cmd/manager)
}

// goBuildValueFlags are the go build flags that take a value.
var goBuildValueFlags = map[string]bool{
	"o": true, "p": true, "C": true, "asmflags": true, "buildmode": true, "compiler": true,
	"gccgoflags": true, "gcflags": true, "installsuffix": true, "ldflags": true, "mod": true,
	"modfile": true, "overlay": true, "pgo": true, "pkgdir": true, "tags": true, "toolexec": true,
}

// goBuilds returns the go builds that the RUNs of stage i run, with
// variables expanded the way the RUN's shell would see them.
func (d *dockerfile) goBuilds(i int, args buildArgs) ([]goBuild, error) {
	var builds []goBuild
	_, err := d.walk(i, args, func(cmd instructions.Command, st state) error {
		run, ok := cmd.(*instructions.RunCommand)
		if !ok {
			return nil
		}
		words := run.CmdLine
		if run.PrependShell {
			var err error
			if words, err = d.shellWords(strings.Join(run.CmdLine, " "), st.vars); err != nil {
				return fmt.Errorf("%s:%d: %w", d.name, line(run.Location()), err)
			}
		}
		for _, cmdWords := range splitCommands(words) {
			if b, ok := parseGoBuild(cmdWords, st); ok {
				b.stage, b.line = i, line(run.Location())
				builds = append(builds, b)
			}
		}
		return nil
	})
	return builds, err
}

// shellWords splits a shell command line into words, with the operators
// &&, ||, ;, | and & as words of their own, then expands each word the way
// the shell would with the variables in scope. (BuildKit's lexer, in its
// several-words mode, drops the text before a ${VAR:-default} of a word, so
// words are split here and expanded one by one.)
func (d *dockerfile) shellWords(cmdline string, scope env) ([]string, error) {
	raw, err := splitShell(cmdline)
	if err != nil {
		return nil, err
	}
	words := make([]string, 0, len(raw))
	for _, w := range raw {
		if isOperator(w) {
			words = append(words, w)
			continue
		}
		v, err := d.expand(w, scope)
		if err != nil {
			return nil, err
		}
		words = append(words, v)
	}
	return words, nil
}

func isOperator(w string) bool {
	return w == "&&" || w == "||" || w == ";" || w == "|" || w == "&"
}

// splitShell splits a POSIX shell command line into its words, quotes and
// escapes kept, at unquoted blanks and operators.
func splitShell(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
			inWord = true
		case c == '\'' || c == '"':
			end := closingQuote(s, i)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c quote in %q", c, s)
			}
			cur.WriteString(s[i : end+1])
			i = end
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == ';' || c == '&' || c == '|':
			flush()
			op := string(c)
			if (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c {
				op += string(c)
				i++
			}
			words = append(words, op)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// closingQuote returns the index of the quote that closes the one at i.
func closingQuote(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '"' && s[j] == '\\':
			j++
		case s[j] == q:
			return j
		}
	}
	return -1
}

// splitCommands splits the words of a shell command line at its operators.
func splitCommands(words []string) [][]string {
	var out [][]string
	var cur []string
	for _, w := range words {
		if isOperator(w) {
			out, cur = append(out, cur), nil
			continue
		}
		cur = append(cur, w)
	}
	return append(out, cur)
}

func parseGoBuild(words []string, st state) (goBuild, bool) {
	b := goBuild{workdir: st.workdir, vars: st.vars, env: map[string]string{}}
	for k, v := range st.envs {
		b.env[k] = v
	}
	i := 0
	for ; i < len(words); i++ {
		k, v, ok := strings.Cut(words[i], "=")
		if !ok || k == "" || strings.ContainsAny(k, "-/.") {
			break
		}
		b.env[k] = v
	}
	if i+1 >= len(words) || path.Base(words[i]) != "go" || words[i+1] != "build" {
		return b, false
	}
	rest := words[i+2:]
	for j := 0; j < len(rest); j++ {
		w := rest[j]
		if !strings.HasPrefix(w, "-") {
			b.pkg = w // the last package wins; builds with an -o name one
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if goBuildValueFlags[name] && !hasValue && j+1 < len(rest) {
			j++
			value = rest[j]
		}
		if name == "o" {
			b.output = value
			continue
		}
		if goBuildValueFlags[name] {
			b.flags = append(b.flags, "-"+name+"="+value)
		} else {
			b.flags = append(b.flags, w)
		}
	}
	if b.pkg == "" {
		b.pkg = "."
	}
	if b.output == "" {
		b.output = path.Base(path.Clean(b.pkg))
	}
	b.output = resolve(st.workdir, b.output)
	return b, true
}

// producing returns the build that writes p in stage i.
func producing(builds []goBuild, p string) (goBuild, bool) {
	for j := len(builds) - 1; j >= 0; j-- {
		if builds[j].output == p {
			return builds[j], true
		}
	}
	return goBuild{}, false
}
