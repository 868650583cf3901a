package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"mvdan.cc/sh/v3/syntax"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// What the kubectl check reads, relative to the repository root.
const (
	readmeDoc = "README.md"
	docsDir   = "docs"
	// e2eDir, nodeDir and olmDir hold the tests that run kubectl, on the
	// simulated cluster, with real containers on the real node, and with
	// OLM on the real node; each command they run as the documentation
	// shows it is the argument list of a call of documentedFunc, in string
	// literals.
	e2eDir         = "test/e2e"
	nodeDir        = "test/e2enode"
	olmDir         = "test/olmnode"
	documentedFunc = "documented"
	kubectlCheck   = "test/docs/kubectl_test.go"
)

// kubectlExclusions are the kubectl commands of the documentation that no
// test runs, each with the reason. An exclusion matches the commands its
// command covers (in canonical form, as a test's would), every command on
// one of its resources, or every command of one of its verbs. One that
// matches no documented command that no test runs, or that matches one a
// test runs, is an error.
var kubectlExclusions = []kubectlExclusion{
	{
		command: "kubectl krew install echo",
		why:     "installs from krew's index on the internet, which no test reaches; test/e2e installs the plugin as make build does",
	},
	{
		command: "kubectl delete echoes --all --all-namespaces --wait",
		why:     "deletes every Echo of the cluster test/e2e shares, the other tests' included",
	},
	{
		command: "kubectl get pods -n echo-operator-system -l control-plane=controller-manager",
		why:     "the manager of test/e2e runs as a local process, not in a pod",
	},
	{
		verbs: []string{"logs", "exec", "port-forward"},
		why:   "no container runs on KWOK's nodes: nothing logs, nothing to exec into or forward to",
	},
}

// TestDocumentedKubectlCommandsAreRun fails when a kubectl command that
// README.md or a page under docs/ shows is run by no test of test/e2e and
// is not in kubectlExclusions.
//
// What counts as a command:
//
//   - In fenced code blocks tagged sh, bash, shell, zsh or console, or not
//     tagged at all: every simple command whose command word is kubectl,
//     after any VAR=value assignments, wherever it stands: in pipelines
//     and lists (`|`, `||`, `&&`, `;`), in `$(...)`, in compound commands.
//     The shell is parsed as bash (mvdan.cc/sh/v3/syntax); quotes are
//     removed, variables are left as written, a heredoc's body is input,
//     not commands, and a placeholder in angle brackets (<name>) is a
//     word, not redirections. Lines joined by a trailing backslash are one
//     command; in tagged blocks, so are the lines of any unfinished
//     command (an open quote, heredoc or `if`, a trailing `|`, `||` or
//     `&&`). A leading `$ ` prompt is removed; in console blocks only lines
//     with that prompt are commands, the others are output. Comments are
//     dropped, but a comment holding `kubectl ...` (`# or kubectl get
//     ecr`) yields that command. Blocks tagged with any other language
//     (yaml, json, promql...) are not read.
//   - Inline code spans, in prose and in tables, that hold such a command;
//     a span may wrap over lines of its paragraph.
//   - A block's command or a span that names kubectl but does not parse is
//     an error: its commands would go unchecked.
//   - `kubectl` alone names the tool, not a command. A command of a verb
//     that needs a target but names none (`kubectl patch`, `kubectl wait
//     --for=condition=Complete`) is a fragment: it is covered by any run
//     command of that verb that has its flags.
//
// Commands compare in canonical form (see canonicalKubectl): the verb, the
// resources as written with every object name replaced by NAME, and the
// flags sorted, with the values that are the reader's own (names, files,
// patches, counts, durations, the namespace) replaced.
func TestDocumentedKubectlCommandsAreRun(t *testing.T) {
	fsys := os.DirFS(reporoot.Must(t))
	inDocs, problems := documentedKubectl(fsys)
	tested, p := testedKubectl(fsys)
	problems = append(problems, p...)
	// A broken reader would make every check below pass.
	if len(inDocs) < 10 || len(tested) < 10 {
		t.Fatalf("found %d kubectl commands in the documentation and %d run by %s: the readers are broken\n%s",
			len(inDocs), len(tested), e2eDir, strings.Join(problems, "\n"))
	}
	problems = append(problems, checkKubectl(inDocs, tested, kubectlExclusions)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// --- Canonical commands

// kubectlCmd is a kubectl command in canonical form.
type kubectlCmd struct {
	verb  string   // with its subcommands: "get", "create namespace"
	args  []string // the positional arguments after the verb
	flags []string // sorted; "--name" or "--name=value"
}

func (c kubectlCmd) String() string {
	return strings.Join(slices.Concat([]string{c.verb}, c.args, c.flags), " ")
}

// words is the command as arguments of kubectl.
func (c kubectlCmd) words() []string {
	return slices.Concat(strings.Fields(c.verb), c.args, c.flags)
}

// fragment reports whether c names a verb that needs a target without
// naming one.
func (c kubectlCmd) fragment() bool {
	if len(c.args) > 0 || !needsTarget[strings.Fields(c.verb)[0]] {
		return false
	}
	for _, f := range c.flags {
		name, _, _ := strings.Cut(f, "=")
		if name == "--filename" || name == "--selector" || name == "--all" {
			return false
		}
	}
	return true
}

// resources are the resources c acts on, as written.
func (c kubectlCmd) resources() []string {
	if !objectVerbs[strings.Fields(c.verb)[0]] || len(c.args) == 0 {
		return nil
	}
	if !strings.Contains(c.args[0], "/") {
		return strings.Split(c.args[0], ",")
	}
	var out []string
	for _, a := range c.args {
		if typ, _, ok := strings.Cut(a, "/"); ok {
			out = append(out, typ)
		}
	}
	return out
}

// kubectlCovers reports whether running run exercises the documented doc.
func kubectlCovers(run, doc kubectlCmd) bool {
	if run.String() == doc.String() {
		return true
	}
	if !doc.fragment() || run.verb != doc.verb {
		return false
	}
	for _, f := range doc.flags {
		if !slices.Contains(run.flags, f) {
			return false
		}
	}
	return true
}

var (
	// objectVerbs take a resource and names, or TYPE/NAME arguments.
	objectVerbs = wordSet("get", "describe", "delete", "edit", "patch", "scale", "wait", "label", "annotate",
		"autoscale", "expose", "rollout", "set", "top")
	// podVerbs take a pod name or TYPE/NAME, then their own arguments.
	podVerbs = wordSet("logs", "exec", "attach", "port-forward", "debug")
	// needsTarget are the verbs that do nothing without a target.
	needsTarget = wordSet("get", "describe", "delete", "edit", "patch", "scale", "wait", "label", "annotate",
		"autoscale", "expose", "logs", "exec", "attach", "port-forward", "explain", "apply", "create", "replace")

	kubectlSubcommands = map[string][]string{
		"create": {"clusterrole", "clusterrolebinding", "configmap", "cm", "cronjob", "deployment", "ingress", "job",
			"namespace", "ns", "poddisruptionbudget", "pdb", "priorityclass", "quota", "role", "rolebinding",
			"secret", "service", "serviceaccount", "sa", "token"},
		"create secret":  {"docker-registry", "generic", "tls"},
		"create service": {"clusterip", "externalname", "loadbalancer", "nodeport"},
		"rollout":        {"history", "pause", "restart", "resume", "status", "undo"},
		"set":            {"env", "image", "resources", "selector", "serviceaccount", "subject"},
		"top":            {"node", "pod"},
		"auth":           {"can-i", "reconcile", "whoami"},
		"certificate":    {"approve", "deny"},
		"cluster-info":   {"dump"},
		"apply":          {"edit-last-applied", "set-last-applied", "view-last-applied"},
		"config": {"current-context", "delete-cluster", "delete-context", "delete-user", "get-clusters",
			"get-contexts", "get-users", "rename-context", "set", "set-cluster", "set-context",
			"set-credentials", "unset", "use-context", "view"},
		// The project's own plugin (docs/kubectl-plugin.md).
		"echo": {"status", "backup", "restore", "history", "rollback", "backups", "completion", "logs"},
	}

	shortFlags = map[string]string{
		"-A": "--all-namespaces", "-c": "--container", "-f": "--filename", "-i": "--stdin",
		"-k": "--kustomize", "-l": "--selector", "-L": "--label-columns", "-n": "--namespace",
		"-o": "--output", "-p": "--patch", "-R": "--recursive", "-t": "--tty", "-w": "--watch",
	}
	// Short flags that mean something else to the pod verbs.
	podShortFlags = map[string]string{"-f": "--follow", "-p": "--previous"}

	boolFlags = wordSet("--all", "--all-containers", "--all-namespaces", "--dry-run", "--follow", "--force", "--help", "--ignore-not-found",
		"--local", "--no-headers", "--now", "--overwrite", "--previous", "--quiet", "--recursive",
		"--server-side", "--show-kind", "--show-labels", "--show-managed-fields", "--stdin", "--timestamps",
		"--tty", "--wait", "--watch", "--watch-only")

	// Flags whose value is the reader's context, not the command's.
	droppedFlags = wordSet("--namespace", "--kubeconfig", "--context", "--cluster", "--user")

	placeholderRe = regexp.MustCompile(`^(?:[A-Z][A-Z0-9_]*|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)$|<[^>]*>`)
)

func wordSet(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

// isPlaceholder reports whether s stands for something the reader fills
// in: an upper-case word (NAME, NS, ECHO, N), a shell variable or
// something in angle brackets (<name>, <restore>-restore).
func isPlaceholder(s string) bool { return placeholderRe.MatchString(s) }

func placeholder(s string) string {
	if isPlaceholder(s) {
		return "NAME"
	}
	return s
}

// canonicalKubectl turns the arguments of a kubectl command into canonical
// form; ok is false when they name no verb. The rules:
//
//   - The verb is the first positional argument, with its subcommands
//     (create namespace, rollout status); flags may come before it.
//   - For the verbs that act on objects (get, describe, delete, patch,
//     scale, wait...), the resource argument is kept as written (echo, ec,
//     echoes, subscription,csv) and every object name becomes NAME, in
//     TYPE/NAME too (echo/echo-ha is echo/NAME); two or more names are
//     NAME... . label and annotate keep their key=value arguments. explain
//     keeps its field path. The names given to create's subcommands become
//     NAME; other arguments are kept, placeholders becoming NAME.
//   - Short flags become long ones (-o is --output, -w --watch), --flag
//     value becomes --flag=value, and the flags are sorted. The namespace,
//     kubeconfig and context flags are dropped: the reader's context, not
//     the command. Values that are the reader's own are replaced: a file
//     (except - for the standard input; --from-file's key=file too) is
//     FILE, a patch PATCH, a count (--replicas) N, a duration (--timeout)
//     DURATION; in label selectors and other values, placeholders become
//     NAME (-l owner=helm,name=ECHO is --selector=owner=helm,name=NAME). Other values are kept: they
//     shape what the command does (-o wide, --type=json,
//     --for=condition=Ready).
//   - A placeholder is an upper-case word (NAME, NS, ECHO, N), a shell
//     variable, or anything in angle brackets (<name>).
func canonicalKubectl(words []string) (kubectlCmd, bool) {
	var (
		verb       string
		positional []string
		flags      []string
	)
	words = slices.Clone(words)
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			positional = append(positional, words[i+1:]...)
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			positional = append(positional, w)
			if verb == "" {
				verb = w
			}
			continue
		}
		var (
			name, value string
			hasValue    bool
		)
		if strings.HasPrefix(w, "--") {
			name, value, hasValue = strings.Cut(w, "=")
		} else {
			name = w[:2]
			if len(w) > 2 {
				rest := w[2:]
				if isBoolFlag(longFlag(verb, name)) && !strings.HasPrefix(rest, "=") {
					// Bool flags run together: -it.
					for _, c := range rest {
						words = slices.Insert(words, i+1, "-"+string(c))
					}
				} else {
					value, hasValue = strings.TrimPrefix(rest, "="), true
				}
			}
		}
		name = longFlag(verb, name)
		if !hasValue && !isBoolFlag(name) && i+1 < len(words) {
			value, hasValue = words[i+1], true
			i++
		}
		if f, keep := canonicalFlag(name, value, hasValue); keep {
			flags = append(flags, f)
		}
	}
	if verb == "" {
		return kubectlCmd{}, false
	}
	args := positional[1:]
	for len(args) > 0 && slices.Contains(kubectlSubcommands[verb], args[0]) {
		verb += " " + args[0]
		args = args[1:]
	}
	slices.Sort(flags)
	return kubectlCmd{verb: verb, args: canonicalArgs(verb, args), flags: flags}, true
}

func longFlag(verb, short string) string {
	if strings.HasPrefix(short, "--") {
		return short
	}
	if podVerbs[verb] {
		if long, ok := podShortFlags[short]; ok {
			return long
		}
	}
	if long, ok := shortFlags[short]; ok {
		return long
	}
	return short
}

func isBoolFlag(name string) bool { return boolFlags[name] }

// canonicalFlag is a flag in canonical form; keep is false for the flags
// dropped.
func canonicalFlag(name, value string, hasValue bool) (f string, keep bool) {
	if droppedFlags[name] {
		return "", false
	}
	if isBoolFlag(name) {
		if !hasValue || value == "true" {
			return name, true
		}
		return name + "=" + value, true
	}
	switch name {
	case "--filename":
		if value != "-" {
			value = "FILE"
		}
	case "--from-file":
		// [key=]path: the reader's own file.
		value = "FILE"
	case "--patch":
		value = "PATCH"
	case "--replicas", "--current-replicas", "--min", "--max", "--to-revision":
		value = "N"
	case "--location", "--schedule", "--to":
		value = "NAME"
	case "--timeout", "--request-timeout", "--since":
		value = "DURATION"
	case "--selector", "--field-selector":
		value = canonicalSelector(value)
	case "--for":
		if typ, _, ok := strings.Cut(value, "/"); ok && !strings.Contains(typ, "=") {
			value = typ + "/NAME"
		}
	default:
		value = placeholder(value)
	}
	return name + "=" + value, true
}

// canonicalSelector replaces the placeholder values of a label selector.
func canonicalSelector(sel string) string {
	terms := strings.Split(sel, ",")
	for i, term := range terms {
		for _, op := range []string{"!=", "==", "="} {
			if key, value, ok := strings.Cut(term, op); ok {
				terms[i] = key + op + placeholder(value)
				break
			}
		}
	}
	return strings.Join(terms, ",")
}

// canonicalArgs replaces the object names among the positional arguments
// after the verb.
func canonicalArgs(verb string, args []string) []string {
	base := strings.Fields(verb)[0]
	var out []string
	switch {
	case objectVerbs[base]:
		typed := slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "/") && !isSpec(base, a) })
		for i, a := range args {
			switch {
			case isSpec(base, a):
				out = append(out, canonicalSpec(a))
			case typed:
				if typ, _, ok := strings.Cut(a, "/"); ok {
					a = typ + "/NAME"
				}
				out = append(out, placeholder(a))
			case i == 0:
				out = append(out, a)
			default:
				out = append(out, "NAME")
			}
		}
	case podVerbs[base]:
		for i, a := range args {
			if i == 0 {
				if typ, _, ok := strings.Cut(a, "/"); ok {
					a = typ + "/NAME"
				} else {
					a = "NAME"
				}
			}
			out = append(out, placeholder(a))
		}
	case base == "explain":
		out = args
	case (base == "create" || base == "echo") && verb != base:
		for range args {
			out = append(out, "NAME")
		}
	default:
		for _, a := range args {
			out = append(out, placeholder(a))
		}
	}
	return collapseNames(out)
}

// isSpec reports whether a is the key=value or key- argument of label,
// annotate or set.
func isSpec(verb, a string) bool {
	return (verb == "label" || verb == "annotate" || verb == "set") &&
		(strings.Contains(a, "=") || strings.HasSuffix(a, "-"))
}

func canonicalSpec(a string) string {
	if key, value, ok := strings.Cut(a, "="); ok {
		return key + "=" + placeholder(value)
	}
	return a
}

// collapseNames turns a run of two or more NAME into NAME... .
func collapseNames(args []string) []string {
	var out []string
	for _, a := range args {
		n := len(out)
		switch {
		case a == "NAME" && n > 0 && (out[n-1] == "NAME" || out[n-1] == "NAME..."):
			out[n-1] = "NAME..."
		default:
			out = append(out, a)
		}
	}
	return out
}

// --- Shell

// kubectlCall is a kubectl command of a shell text.
type kubectlCall struct {
	args []string // the arguments after kubectl, without their quotes
	text string   // the command as written, on one line
}

var (
	kubectlInCommentRe = regexp.MustCompile(`(^|\s)kubectl\s`)
	// angleRe matches a placeholder in angle brackets (<name>), which the
	// shell would read as redirections.
	angleRe = regexp.MustCompile(`<[A-Za-z][A-Za-z0-9 _.-]*>`)
	// escapeRe matches the backslashes that quote the next byte of a
	// literal outside double quotes (false) and inside (true).
	escapeRe = map[bool]*regexp.Regexp{false: regexp.MustCompile(`(?s)\\(.)`), true: regexp.MustCompile("\\\\([$`\"\\\\])")}
)

// parseShell parses s as bash, comments included.
func parseShell(s string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(s), "")
	if err != nil {
		return nil, err
	}
	// The parser takes a backslash that ends a comment for a line
	// continuation, and joins the next line to the command; the shell
	// does not. Such a backslash is blanked and s parsed again.
	blanked := []byte(s)
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok && strings.HasSuffix(c.Text, "\\\n") {
			if i := int(c.Hash.Offset()) + len(c.Text) - 1; i < len(blanked) && blanked[i] == '\\' {
				blanked[i] = ' '
			}
		}
		return true
	})
	if string(blanked) != s {
		return parseShell(string(blanked))
	}
	return f, nil
}

// kubectlCalls returns the kubectl commands of the shell text s: every
// simple command whose command word is kubectl, after any VAR=value
// assignments, wherever it stands (a pipeline, a list, $(...), a compound
// command), then every command that a comment of s holds (# or kubectl
// get ecr). A comment is prose: one that does not parse holds none.
func kubectlCalls(s string) ([]kubectlCall, error) {
	src, restore := hideAngles(s)
	f, err := parseShell(src)
	if err != nil {
		return nil, err
	}
	var (
		out      []kubectlCall
		comments []string
	)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 && unquoted(src, n.Args[0].Parts, false) == "kubectl" {
				c := kubectlCall{text: "kubectl"}
				for _, w := range n.Args[1:] {
					c.args = append(c.args, restore(unquoted(src, w.Parts, false)))
					c.text += " " + restore(written(src, w))
				}
				out = append(out, c)
			}
		case *syntax.Comment:
			comments = append(comments, restore(n.Text))
		}
		return true
	})
	for _, c := range comments {
		if loc := kubectlInCommentRe.FindStringIndex(c); loc != nil {
			inner, _ := kubectlCalls(strings.TrimLeft(c[loc[0]:], " \t"))
			out = append(out, inner...)
		}
	}
	return out, nil
}

// hideAngles replaces every placeholder in angle brackets of s with a
// word the shell reads as it is; restore puts the placeholders back.
func hideAngles(s string) (hidden string, restore func(string) string) {
	var pairs []string
	hidden = angleRe.ReplaceAllStringFunc(s, func(m string) string {
		mark := fmt.Sprintf("\uE000%d\uE001", len(pairs)/2)
		pairs = append(pairs, mark, m)
		return mark
	})
	return hidden, strings.NewReplacer(pairs...).Replace
}

// unquoted is the word parts of the shell text src without their quotes;
// expansions ($NS, ${NS}, $(...)) are left as written.
func unquoted(src string, parts []syntax.WordPart, inDouble bool) string {
	var b strings.Builder
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(escapeRe[inDouble].ReplaceAllString(p.Value, "$1"))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(written(src, p))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			b.WriteString(unquoted(src, p.Parts, true))
		default:
			b.WriteString(written(src, p))
		}
	}
	return b.String()
}

// written is the node n of the shell text src as written.
func written(src string, n syntax.Node) string { return src[n.Pos().Offset():n.End().Offset()] }

// shellContinues reports whether the shell text s goes on on the next
// line: it ends inside quotes, a heredoc or a compound command, after |,
// || or &&, or with a backslash; then a word on the next line belongs to
// its last command.
func shellContinues(s string) bool {
	src, _ := hideAngles(s)
	f, err := parseShell(src + "\n_")
	if err != nil {
		return syntax.IsIncomplete(err)
	}
	n := len(f.Stmts)
	return n > 0 && f.Stmts[n-1].Pos().Line() <= uint(strings.Count(src, "\n")+1)
}

// --- The documentation's commands

// docKubectl is a kubectl command of a document.
type docKubectl struct {
	file string
	line int
	text string // as written, on one line
	cmd  kubectlCmd
}

func (d docKubectl) String() string { return fmt.Sprintf("%s:%d: %s", d.file, d.line, d.text) }

var (
	fenceRe = regexp.MustCompile("^\\s*(`{3,}|~{3,})\\s*([^\\s`{]*)")
	// shellLangs are the code block languages read for commands, and
	// whether their lines without a prompt are output.
	shellLangs = map[string]bool{"": false, "sh": false, "bash": false, "shell": false, "zsh": false,
		"console": true, "shell-session": true}
)

// documentedKubectl returns the kubectl commands of README.md and of every
// Markdown file under docs/.
func documentedKubectl(fsys fs.FS) ([]docKubectl, []string) {
	files := []string{readmeDoc}
	err := fs.WalkDir(fsys, docsDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, []string{fmt.Sprintf("listing %s: %v", docsDir, err)}
	}
	var (
		out      []docKubectl
		problems []string
	)
	for _, f := range files {
		doc, err := fs.ReadFile(fsys, f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		cmds, p := kubectlInMarkdown(f, string(doc))
		out = append(out, cmds...)
		problems = append(problems, p...)
	}
	return out, problems
}

// docReader collects the kubectl commands of a Markdown document, and the
// problems of reading them.
type docReader struct {
	file     string
	cmds     []docKubectl
	problems []string
}

// kubectlInMarkdown returns the kubectl commands of the Markdown document
// doc, named file, and the problems of reading them.
func kubectlInMarkdown(file, doc string) ([]docKubectl, []string) {
	lines := strings.Split(doc, "\n")
	r := &docReader{file: file}
	var para []mdLine
	flush := func() {
		r.spans(para)
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.TrimSpace(lines[i]) == "" {
				flush()
			} else {
				para = append(para, mdLine{n: i + 1, text: lines[i]})
			}
			continue
		}
		flush()
		fence, lang := m[1], strings.ToLower(m[2])
		var block []mdLine
		for i++; i < len(lines); i++ {
			tr := strings.TrimSpace(lines[i])
			if len(tr) >= len(fence) && strings.Trim(tr, fence[:1]) == "" {
				break
			}
			block = append(block, mdLine{n: i + 1, text: lines[i]})
		}
		if console, ok := shellLangs[lang]; ok {
			r.block(block, console, lang != "")
		}
	}
	flush()
	return r.cmds, r.problems
}

// block reads the kubectl commands of a fenced code block. In a console
// block only lines with a prompt are commands; the lines of an unfinished
// command (an open quote or heredoc, a trailing pipe) join only in a block
// tagged as shell: an untagged one may hold a drawing.
func (r *docReader) block(block []mdLine, console, tagged bool) {
	for i := 0; i < len(block); i++ {
		start := block[i].n
		text, prompted := cutPrompt(block[i].text)
		if console && !prompted {
			continue
		}
		for i+1 < len(block) && (tagged && shellContinues(text) || !tagged && strings.HasSuffix(text, `\`)) {
			i++
			next := block[i].text
			if console {
				next = strings.TrimPrefix(strings.TrimLeft(next, " \t"), "> ")
			}
			text += "\n" + next
		}
		r.add(start, text)
	}
}

func cutPrompt(line string) (string, bool) {
	trimmed := strings.TrimLeft(line, " \t")
	if rest, ok := strings.CutPrefix(trimmed, "$ "); ok {
		return rest, true
	}
	return line, false
}

// spans reads the kubectl commands of the code spans of a paragraph (or of
// the rows of a table).
func (r *docReader) spans(para []mdLine) {
	if len(para) == 0 {
		return
	}
	texts := make([]string, len(para))
	for i, l := range para {
		texts[i] = l.text
	}
	text := strings.Join(texts, "\n")
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		open := runOf(text, i)
		end := -1
		for j := i + open; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			if runOf(text, j) == open {
				end = j
				break
			}
			j += runOf(text, j)
		}
		if end < 0 {
			i += open
			continue
		}
		line := strings.Count(text[:i], "\n")
		content := strings.ReplaceAll(text[i+open:end], "\n", " ")
		if isTableLine(para[line].text) {
			content = strings.ReplaceAll(content, `\|`, "|")
		}
		content, _ = cutPrompt(strings.TrimSpace(content))
		r.add(para[line].n, content)
		i = end + open
	}
}

// runOf is the length of the run of backticks at text[i:].
func runOf(text string, i int) int {
	n := 0
	for i+n < len(text) && text[i+n] == '`' {
		n++
	}
	return n
}

// add reads the kubectl commands of the shell text found at line. Text that
// names kubectl must parse: a command the shell cannot read would go
// unchecked.
func (r *docReader) add(line int, text string) {
	calls, err := kubectlCalls(text)
	if err != nil && strings.Contains(text, "kubectl") {
		r.problems = append(r.problems, fmt.Sprintf("%s:%d: %q does not parse as shell (%v), so %s cannot read its kubectl commands; fix it, or give a block that is not shell its language (text, yaml...)",
			r.file, line, text, err, kubectlCheck))
	}
	for _, c := range calls {
		if cmd, ok := canonicalKubectl(c.args); ok {
			r.cmds = append(r.cmds, docKubectl{file: r.file, line: line, text: c.text, cmd: cmd})
		}
	}
}

// --- The tests' commands

// testedCmd is a command a test of test/e2e runs.
type testedCmd struct {
	pos string // file:line of the documented call
	cmd kubectlCmd
}

// testedKubectl returns the commands of every call of documentedFunc in the
// test files of e2eDir, nodeDir and olmDir. Each argument must be a string literal, so that
// what runs is what is read here.
func testedKubectl(fsys fs.FS) ([]testedCmd, []string) {
	var (
		out      []testedCmd
		problems []string
		fset     = token.NewFileSet()
		names    []string
	)
	for _, dir := range []string{e2eDir, nodeDir, olmDir} {
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return nil, []string{err.Error()}
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), "_test.go") {
				names = append(names, path.Join(dir, e.Name()))
			}
		}
	}
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isCallOf(call.Fun, documentedFunc) {
				return true
			}
			pos := fset.Position(call.Pos())
			at := fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
			var words []string
			for _, a := range call.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || call.Ellipsis.IsValid() {
					problems = append(problems, fmt.Sprintf("%s: %s takes string literals only, so that %s can read the command", at, documentedFunc, kubectlCheck))
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: %v", at, err))
					return true
				}
				words = append(words, s)
			}
			cmd, ok := canonicalKubectl(words)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s(%s) names no kubectl verb", at, documentedFunc, goArgs(words)))
				return true
			}
			out = append(out, testedCmd{pos: at, cmd: cmd})
			return true
		})
	}
	return out, problems
}

func isCallOf(fun ast.Expr, name string) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name == name
	case *ast.SelectorExpr:
		return f.Sel.Name == name
	}
	return false
}

// --- The check

// kubectlExclusion is a documented command no test runs, and why.
type kubectlExclusion struct {
	command   string   // a command as the documentation would show it
	resources []string // or: every command on one of these resources
	verbs     []string // or: every command of one of these verbs
	why       string
}

func (x kubectlExclusion) String() string {
	switch {
	case x.command != "":
		return x.command
	case len(x.verbs) > 0:
		return "kubectl " + strings.Join(x.verbs, ", ")
	}
	return "the commands on " + strings.Join(x.resources, ", ")
}

func (x kubectlExclusion) matches(doc kubectlCmd) bool {
	if len(x.verbs) > 0 {
		return slices.Contains(x.verbs, strings.Fields(doc.verb)[0])
	}
	if x.command != "" {
		calls, _ := kubectlCalls(x.command)
		for _, c := range calls {
			if cmd, ok := canonicalKubectl(c.args); ok && kubectlCovers(cmd, doc) {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(doc.resources(), func(r string) bool { return slices.Contains(x.resources, r) })
}

// checkKubectl reports every documented command that no test runs and no
// exclusion names, every exclusion that names no documented command, and
// every exclusion of a command a test runs.
func checkKubectl(documented []docKubectl, tested []testedCmd, exclusions []kubectlExclusion) []string {
	var problems []string
	used := make([]bool, len(exclusions))
	for _, d := range documented {
		run := slices.IndexFunc(tested, func(t testedCmd) bool { return kubectlCovers(t.cmd, d.cmd) })
		excluded := slices.IndexFunc(exclusions, func(x kubectlExclusion) bool { return x.matches(d.cmd) })
		switch {
		case run >= 0 && excluded >= 0 && !d.cmd.fragment():
			// A fragment (kubectl delete) may match both.
			problems = append(problems, fmt.Sprintf("%s: %s runs this command (`%s`); remove the exclusion %q from %s",
				d, tested[run].pos, d.cmd, exclusions[excluded], kubectlCheck))
			used[excluded] = true
		case run >= 0:
		case excluded >= 0:
			used[excluded] = true
		default:
			problems = append(problems, fmt.Sprintf("%s: no test runs this command (canonical form `%s`); run it in a test of %s, declared as %s(%s), or add it with the reason to kubectlExclusions in %s",
				d, d.cmd, e2eDir+" (real containers': "+nodeDir+", OLM's: "+olmDir+")", documentedFunc, goArgs(d.cmd.words()), kubectlCheck))
		}
	}
	for i, x := range exclusions {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("%s: the exclusion %q matches no kubectl command of %s or %s/ that no test runs; remove it",
				kubectlCheck, x, readmeDoc, docsDir))
		}
	}
	return problems
}

func goArgs(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = strconv.Quote(w)
	}
	return strings.Join(quoted, ", ")
}

// --- Tests of the kubectl check itself

// kubectlArgs is the arguments of the one kubectl command of line.
func kubectlArgs(t *testing.T, line string) []string {
	t.Helper()
	calls, err := kubectlCalls(line)
	if err != nil || len(calls) != 1 {
		t.Fatalf("%q: %d kubectl commands (%v), want 1", line, len(calls), err)
	}
	return calls[0].args
}

func TestCanonicalKubectl(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{"kubectl get echoes", "get echoes"},
		{"kubectl get echo -o wide", "get echo --output=wide"},
		{"kubectl -n prod get echo journal -owide", "get echo NAME --output=wide"},
		{"kubectl get echo NAME -n NAMESPACE -o yaml", "get echo NAME --output=yaml"},
		{"kubectl describe echo echo-sample", "describe echo NAME"},
		{"kubectl create secret generic backup-key --from-file=key=backup.key", "create secret generic NAME --from-file=FILE"},
		{"kubectl create secret generic K --from-file KEYFILE", "create secret generic NAME --from-file=FILE"},
		{"kubectl scale echo/echo-ha --replicas=5", "scale echo/NAME --replicas=N"},
		{"kubectl scale --replicas N echo/NAME", "scale echo/NAME --replicas=N"},
		{"kubectl get subscription,installplan,csv -n echo-operator", "get subscription,installplan,csv"},
		{"kubectl delete crd a.echo.dev b.echo.dev \\\n  c.echo.dev", "delete crd NAME..."},
		{"kubectl delete secret --namespace=NS -l owner=helm,name=ECHO", "delete secret --selector=owner=helm,name=NAME"},
		{"kubectl delete secret -l owner=helm,name=echo-sample", "delete secret --selector=owner=helm,name=echo-sample"},
		{`kubectl patch echobackup <name> --type=json -p '[{"op":"remove"}]'`, "patch echobackup NAME --patch=PATCH --type=json"},
		{`kubectl patch echo x --type merge -p "{}"`, "patch echo NAME --patch=PATCH --type=merge"},
		{"kubectl wait echorestore/r --for=jsonpath='{.status.completionTime}' --timeout=1h", "wait echorestore/NAME --for=jsonpath={.status.completionTime} --timeout=DURATION"},
		{"kubectl wait --for=condition=Ready echo/NAME", "wait echo/NAME --for=condition=Ready"},
		{"kubectl events -n NAMESPACE --for echo/NAME", "events --for=echo/NAME"},
		{"kubectl create namespace prod-recovered", "create namespace NAME"},
		{"kubectl -n prod create -f -", "create --filename=-"},
		{"kubectl apply -n team-a -f config/samples/echo.yaml", "apply --filename=FILE"},
		{"kubectl describe job <restore>-restore", "describe job NAME"},
		{`kubectl get echo "$ECHO" -n "${NS}"`, "get echo NAME"},
		{"kubectl explain echo.spec.persistence", "explain echo.spec.persistence"},
		{"kubectl logs -n echo-operator-system deploy/echo-operator-controller-manager -f", "logs deploy/NAME --follow"},
		{"kubectl exec -it POD -- sh", "exec NAME sh --stdin --tty"},
		{"kubectl annotate echo x echo.dev/pause-reconcile=true", "annotate echo NAME echo.dev/pause-reconcile=true"},
		{"kubectl get echo -w --all-namespaces=true", "get echo --all-namespaces --watch"},
		{"kubectl rollout status deployment/x", "rollout status deployment/NAME"},
	} {
		got, ok := canonicalKubectl(kubectlArgs(t, tc.line))
		if !ok || got.String() != tc.want {
			t.Errorf("%q: canonical %q (%v), want %q", tc.line, got, ok, tc.want)
		}
	}
	if _, ok := canonicalKubectl([]string{"--kubeconfig", "x"}); ok {
		t.Error("a command without a verb was accepted")
	}
}

func TestKubectlCalls(t *testing.T) {
	for _, tc := range []struct {
		shell string
		want  [][]string
	}{
		{"kubectl get ec", [][]string{{"get", "ec"}}},
		{"kubectl", [][]string{nil}},
		// Pipelines, lists, assignments before the command.
		{"KUBECONFIG=x kubectl get ec | grep a && kubectl get all; echo kubectl get no", [][]string{{"get", "ec"}, {"get", "all"}}},
		{"kubectl get a || kubectl get b & kubectl get c", [][]string{{"get", "a"}, {"get", "b"}, {"get", "c"}}},
		// Comments, and the commands they name.
		{"kubectl get echorestores          # or kubectl get ecr", [][]string{{"get", "echorestores"}, {"get", "ecr"}}},
		{"kubectl delete csv x -n y   # if you made it", [][]string{{"delete", "csv", "x", "-n", "y"}}},
		{"# then kubectl get ecr\nkubectl get echo", [][]string{{"get", "echo"}, {"get", "ecr"}}},
		{"kubectl get a # or kubectl get b (short)", [][]string{{"get", "a"}}},
		{"kubectl get a # a comment \\\nkubectl get b", [][]string{{"get", "a"}, {"get", "b"}}},
		// Redirections are no arguments.
		{"kubectl get echo 2>&1 >out.txt", [][]string{{"get", "echo"}}},
		{"kubectl get echo >out.txt -o yaml", [][]string{{"get", "echo", "-o", "yaml"}}},
		// kubectl must be the command word.
		{"alias kubectl=$PWD/bin/kubectl", nil},
		{"bin/kubectl get ec", nil},
		{"echo 'kubectl get ec'", nil},
		{`"kubectl" get ec`, [][]string{{"get", "ec"}}},
		// Line continuations, between words and inside one.
		{"kubectl delete crd a \\\n  b \\\n  c", [][]string{{"delete", "crd", "a", "b", "c"}}},
		{"kubectl get ec\\\nho", [][]string{{"get", "echo"}}},
		// Quotes and escapes are removed, expansions left as written.
		{`kubectl patch echo x -p '{"a": "b c"}' --type "merge" a\ b '' "q\"\$\\\x"`,
			[][]string{{"patch", "echo", "x", "-p", `{"a": "b c"}`, "--type", "merge", "a b", "", `q"$\\x`}}},
		{`kubectl -n "${NS}" get echo $ECHO "$ECHO-data" -o "jsonpath={.x}"`,
			[][]string{{"-n", "${NS}", "get", "echo", "$ECHO", "$ECHO-data", "-o", "jsonpath={.x}"}}},
		// Commands in $(...) and in compound commands.
		{`ECHO=$(kubectl get echo -o name) && kubectl describe "$ECHO"`, [][]string{{"get", "echo", "-o", "name"}, {"describe", "$ECHO"}}},
		{"if kubectl get ns x; then\n  kubectl delete ns x\nfi", [][]string{{"get", "ns", "x"}, {"delete", "ns", "x"}}},
		// A heredoc's body is the command's input, not commands.
		{"kubectl apply -f - <<EOF\nkind: Echo\nkubectl get nothing\nEOF\nkubectl get echo", [][]string{{"apply", "-f", "-"}, {"get", "echo"}}},
		// Placeholders in angle brackets are words, not redirections.
		{"kubectl describe job <restore>-restore -n <namespace name> '<q>'", [][]string{{"describe", "job", "<restore>-restore", "-n", "<namespace name>", "<q>"}}},
	} {
		calls, err := kubectlCalls(tc.shell)
		got := make([][]string, len(calls))
		for i, c := range calls {
			got[i] = c.args
		}
		if err != nil || !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("kubectlCalls(%q) = %q, %v; want %q", tc.shell, got, err, tc.want)
		}
	}
	for _, shell := range []string{"kubectl get (echo)", "kubectl get 'echo"} {
		if _, err := kubectlCalls(shell); err == nil {
			t.Errorf("kubectlCalls(%q) parsed", shell)
		}
	}
	// The text of a command is as written, on one line.
	calls, err := kubectlCalls("A=1 kubectl patch echo <name> \\\n  -p '{}' \"$B\" | cat")
	if err != nil || len(calls) != 1 || calls[0].text != `kubectl patch echo <name> -p '{}' "$B"` {
		t.Errorf("kubectlCalls = %+v, %v", calls, err)
	}
}

func TestShellContinues(t *testing.T) {
	for _, s := range []string{`kubectl get ec \`, "kubectl get ec |", "kubectl get ec ||", "kubectl get ec &&",
		"jq '.a | {b,", `echo "a`, "x=$(kubectl get ec", "kubectl apply -f - <<EOF", "kubectl apply -f - <<EOF\nkind: Echo",
		"if kubectl get ns x; then", "the operator's |"} {
		if !shellContinues(s) {
			t.Errorf("shellContinues(%q) = false", s)
		}
	}
	for _, s := range []string{"", "kubectl get ec", `kubectl get ec \\`, "kubectl get ec;", "kubectl get ec &",
		`kubectl get ec # a comment \`, "kubectl describe echo <name>", "kubectl apply -f - <<EOF\nkind: Echo\nEOF"} {
		if shellContinues(s) {
			t.Errorf("shellContinues(%q) = true", s)
		}
	}
}

const kubectlSampleDoc = "# Title\n" + // 1
	"\n" + // 2
	"Run `kubectl get echoes`, then `kubectl describe\n" + // 3
	"echo NAME`; `kubectl` alone and `-o wide` are no commands.\n" + // 4
	"\n" + // 5
	"| Step | Command |\n" + // 6
	"|------|---------|\n" + // 7
	"| one | `kubectl get ec` |\n" + // 8
	"\n" + // 9
	"```sh\n" + // 10
	"export KUBECONFIG=x\n" + // 11
	"kubectl delete crd a b \\\n" + // 12
	"  c\n" + // 13
	"aws s3 cp x - |\n" + // 14
	"  jq '.a | {b,\n" + // 15
	"     c}' |\n" + // 16
	"  kubectl create -f -\n" + // 17
	"kubectl apply -f - <<EOF\n" + // 18
	"kind: Echo\n" + // 19
	"kubectl get nothing\n" + // 20
	"EOF\n" + // 21
	"```\n" + // 22
	"\n" + // 23
	"```console\n" + // 24
	"$ kubectl get echobackups\n" + // 25
	"NAME    kubectl get nothing\n" + // 26
	"$ kubectl get echoes \\\n" + // 27
	">   -o wide\n" + // 28
	"```\n" + // 29
	"\n" + // 30
	"```yaml\n" + // 31
	"command: kubectl get nothing\n" + // 32
	"```\n" + // 33
	"\n" + // 34
	"```\n" + // 35
	"  kubectl apply -f echo.yaml\n" + // 36
	"the operator's |\n" + // 37
	"kubectl get pods\n" + // 38
	"```\n" + // 39
	"\n" + // 40
	"- A list item:\n" + // 41
	"\n" + // 42
	"  ```sh\n" + // 43
	"  kubectl delete pod POD -n NAMESPACE\n" + // 44
	"  ```\n" + // 45
	"\n" + // 46
	"Not shell: `kubectl get (echo)`; not kubectl: `the operator's`.\n" // 47

func TestKubectlInMarkdown(t *testing.T) {
	cmds, problems := kubectlInMarkdown("doc.md", kubectlSampleDoc)
	var got []string
	for _, d := range cmds {
		got = append(got, fmt.Sprintf("%d: %s", d.line, d.cmd))
	}
	want := []string{
		"3: get echoes",
		"3: describe echo NAME",
		"8: get ec",
		"12: delete crd NAME...",
		"14: create --filename=-",
		"18: apply --filename=-",
		"25: get echobackups",
		"27: get echoes --output=wide",
		"36: apply --filename=FILE",
		"38: get pods",
		"44: delete pod NAME",
	}
	if !slices.Equal(got, want) {
		t.Errorf("kubectlInMarkdown =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	expectProblems(t, problems, []string{`doc.md:47: "kubectl get (echo)" does not parse as shell`})
}

func TestCheckKubectl(t *testing.T) {
	cmd := func(line string) kubectlCmd {
		t.Helper()
		c, ok := canonicalKubectl(kubectlArgs(t, line))
		if !ok {
			t.Fatalf("%q names no verb", line)
		}
		return c
	}
	doc := func(line string, n int) docKubectl {
		return docKubectl{file: "docs/x.md", line: n, text: line, cmd: cmd(line)}
	}
	tested := []testedCmd{
		{pos: "test/e2e/k_test.go:10", cmd: cmd("kubectl get echo ECHO")},
		{pos: "test/e2e/k_test.go:11", cmd: cmd("kubectl wait echorestore/R --for=condition=Complete --timeout=1m")},
		{pos: "test/e2e/k_test.go:12", cmd: cmd("kubectl delete secret SECRET")},
	}
	olm := kubectlExclusion{resources: []string{"csv", "subscription"}, why: "OLM"}
	logs := kubectlExclusion{verbs: []string{"logs"}, why: "no containers"}
	crd := kubectlExclusion{command: "kubectl delete crd a b", why: "shared"}
	for _, tc := range []struct {
		name       string
		docs       []docKubectl
		exclusions []kubectlExclusion
		want       []string
	}{
		{
			name: "covered, fragments too",
			docs: []docKubectl{doc("kubectl get echo echo-sample -n prod", 1), doc("kubectl wait --for=condition=Complete", 2),
				doc("kubectl delete", 3), doc("kubectl get", 4)},
		},
		{
			name: "a command no test runs",
			docs: []docKubectl{doc("kubectl get echo -o wide", 7)},
			want: []string{`docs/x.md:7: kubectl get echo -o wide: no test runs this command (canonical form ` + "`get echo --output=wide`" +
				`); run it in a test of test/e2e (real containers': test/e2enode, OLM's: test/olmnode), declared as documented("get", "echo", "--output=wide")`},
		},
		{
			name: "a fragment whose flags no test has",
			docs: []docKubectl{doc("kubectl wait --for=delete", 2)},
			want: []string{"docs/x.md:2: kubectl wait --for=delete: no test runs this command"},
		},
		{
			name:       "excluded by resource, verb and command",
			docs:       []docKubectl{doc("kubectl get subscription,csv -n olm", 1), doc("kubectl logs POD", 2), doc("kubectl delete crd x y z", 3), doc("kubectl delete", 4)},
			exclusions: []kubectlExclusion{olm, logs, crd},
		},
		{
			name:       "an exclusion that matches nothing, or a command a test runs",
			docs:       []docKubectl{doc("kubectl delete secret NAME", 5), doc("kubectl delete", 6)},
			exclusions: []kubectlExclusion{olm, {command: "kubectl delete secret x", why: "no"}, {verbs: []string{"delete"}, why: "no"}},
			want: []string{
				`docs/x.md:5: kubectl delete secret NAME: test/e2e/k_test.go:12 runs this command (` + "`delete secret NAME`" + `); remove the exclusion "kubectl delete secret x"`,
				`the exclusion "the commands on csv, subscription" matches no kubectl command`,
				`the exclusion "kubectl delete" matches no kubectl command of README.md or docs/ that no test runs`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectProblems(t, checkKubectl(tc.docs, tested, tc.exclusions), tc.want)
		})
	}
}

func TestTestedKubectl(t *testing.T) {
	fsys := fstest.MapFS{
		"test/e2e/a_test.go": {Data: []byte(`package e2e

func TestA(t *testing.T) {
	d.run(g, documented("get", "echo", "ECHO", "-o", ` + "`yaml`" + `))
	documented("patch", "echo", "ECHO", "-p", name)
	documented()
}
`)},
		"test/e2e/helper.go":     {Data: []byte("package e2e\n\nvar _ = documented(\"not\", \"read\")\n")},
		"test/e2enode/c_test.go": {Data: []byte("package e2enode\n\nvar _ = documented(\"get\", \"pods\")\n")},
		"test/olmnode/b_test.go": {Data: []byte("package olmnode\n\nvar _ = documented(\"get\", \"csv\", \"-n\", \"olm\")\n")},
	}
	tested, problems := testedKubectl(fsys)
	if len(tested) != 3 || tested[0].cmd.String() != "get echo NAME --output=yaml" || tested[0].pos != "test/e2e/a_test.go:4" ||
		tested[1].cmd.String() != "get pods" || tested[1].pos != "test/e2enode/c_test.go:3" ||
		tested[2].cmd.String() != "get csv" || tested[2].pos != "test/olmnode/b_test.go:3" {
		t.Errorf("testedKubectl = %+v", tested)
	}
	expectProblems(t, problems, []string{
		"test/e2e/a_test.go:5: documented takes string literals only",
		"test/e2e/a_test.go:6: documented() names no kubectl verb",
	})
}
