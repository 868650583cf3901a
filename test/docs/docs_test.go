package docs_test

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// The documents and the tables they must hold, relative to the repository
// root.
const (
	developmentDoc = "docs/development.md"
	layoutHeading  = "Layout"
	layoutPathCol  = "Path"
	layoutTextCol  = "Contents"

	architectureDoc = "docs/architecture.md"
	rbacHeading     = "RBAC"
	rbacGroupCol    = "API group"
	rbacResourceCol = "Resources"
	rbacVerbsCol    = "Verbs"
	rbacWhyCol      = "Why"

	roleFile = "config/rbac/role.yaml"
)

// TestLayoutTableListsEveryGoPackageDirectory fails when a directory of the
// repository holding Go files has no row in the layout table of
// docs/development.md, or when a row of that table names a path that does
// not exist.
func TestLayoutTableListsEveryGoPackageDirectory(t *testing.T) {
	root := reporoot.Must(t)
	fsys := os.DirFS(root)

	pkgs, err := goPackageDirs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must at least find this package and the operator's binary;
	// otherwise it is broken and every check below would pass vacuously.
	for _, want := range []string{"test/docs", "cmd/manager"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("the walk of %s found no Go package %s; it found %v", root, want, pkgs)
		}
	}

	doc, err := fs.ReadFile(fsys, developmentDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, problems := layoutRows(string(doc))
	problems = append(problems, checkLayout(fsys, pkgs, rows)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestRBACTableCoversTheManagerRole fails when a resource or a verb that
// config/rbac/role.yaml grants is missing from the RBAC table of
// docs/architecture.md, or when the table lists one the role does not
// grant.
func TestRBACTableCoversTheManagerRole(t *testing.T) {
	fsys := os.DirFS(reporoot.Must(t))

	role, err := fs.ReadFile(fsys, roleFile)
	if err != nil {
		t.Fatal(err)
	}
	grants, err := roleGrants(role)
	if err != nil {
		t.Fatalf("%s: %v", roleFile, err)
	}
	doc, err := fs.ReadFile(fsys, architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, problems := rbacRows(string(doc))
	problems = append(problems, checkRBAC(grants, rows)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// --- Go package directories

// goPackageDirs returns every directory of fsys that holds a Go file, as a
// slash-separated path relative to the root of fsys, sorted. It looks where
// the go command would, plus nested modules:
//
//   - directories whose name starts with "." or "_" (.git, _output, ...),
//     testdata and vendor directories are skipped with everything below
//     them, and so are Go files whose name starts with "." or "_", as the
//     go command ignores them;
//   - bin at the root is skipped: it holds the tools the Makefile builds,
//     is fenced off as a module of its own (bin/go.mod) and is not in Git;
//   - other nested modules are walked like the rest: hack/imagecheck, a
//     module of its own, is part of the repository and has its rows.
//
// Test-only directories (test/e2e, test/olm) count: a package is a
// directory holding .go files, test files included.
func goPackageDirs(fsys fs.FS) ([]string, error) {
	var dirs []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(p) {
				return fs.SkipDir
			}
			return nil
		}
		if isGoFile(d) {
			dir := path.Dir(p)
			if len(dirs) == 0 || dirs[len(dirs)-1] != dir {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking the repository: %w", err)
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

func skipDir(p string) bool {
	if p == "." {
		return false
	}
	name := path.Base(p)
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "vendor" || p == "bin"
}

func isGoFile(d fs.DirEntry) bool {
	name := d.Name()
	return d.Type().IsRegular() && strings.HasSuffix(name, ".go") &&
		!strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_")
}

// packageSynopsis is the first sentence of the package comment of dir, or
// "" when none of its Go files has one.
func packageSynopsis(fsys fs.FS, dir string) string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if !isGoFile(e) {
			continue
		}
		src, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil || f.Doc == nil {
			continue
		}
		text := strings.Join(strings.Fields(f.Doc.Text()), " ")
		if i := strings.Index(text, ". "); i >= 0 {
			text = text[:i+1]
		}
		return text
	}
	return ""
}

// --- Markdown

// mdLine is a line of a Markdown document with its 1-based line number.
type mdLine struct {
	n    int
	text string
}

// mdTable is a pipe table: its header cells and its body rows.
type mdTable struct {
	header []string
	rows   []mdRow
}

type mdRow struct {
	line  int
	cells []string
}

// column returns the index of the header cell named name.
func (t mdTable) column(name string) int { return slices.Index(t.header, name) }

// cell returns the cell of row in column i, or "" when the row is short.
func (r mdRow) cell(i int) string {
	if i < 0 || i >= len(r.cells) {
		return ""
	}
	return r.cells[i]
}

var (
	headingRe   = regexp.MustCompile(`^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	delimCellRe = regexp.MustCompile(`^:?-+:?$`)
	codeSpanRe  = regexp.MustCompile("`([^`]+)`")
)

// section returns the lines under the one heading whose text is heading, up
// to the next heading of the same or a higher level. Lines inside fenced
// code blocks are never headings.
func section(doc, heading string) ([]mdLine, error) {
	var (
		out     []mdLine
		level   int // level of the heading found; 0 until found
		found   int
		inFence bool
	)
	for i, text := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(text)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
		}
		if m := headingRe.FindStringSubmatch(text); m != nil && !inFence {
			switch {
			case m[2] == heading:
				found++
				level = len(m[1])
				continue
			case level > 0 && len(m[1]) <= level:
				level = 0
			}
		}
		if level > 0 {
			out = append(out, mdLine{n: i + 1, text: text})
		}
	}
	switch found {
	case 0:
		return nil, fmt.Errorf("no heading %q", heading)
	case 1:
		return out, nil
	default:
		return nil, fmt.Errorf("%d headings %q; rename all but one", found, heading)
	}
}

// findTable returns the first pipe table of lines whose header has a cell
// named after each of columns.
func findTable(lines []mdLine, columns ...string) (mdTable, error) {
	for _, t := range pipeTables(lines) {
		if hasColumns(t.header, columns) {
			return t, nil
		}
	}
	return mdTable{}, fmt.Errorf("no table with the columns %s", strings.Join(columns, " | "))
}

// pipeTables returns the pipe tables of lines, in order.
func pipeTables(lines []mdLine) []mdTable {
	var tables []mdTable
	for i := 0; i+1 < len(lines); i++ {
		if !isTableLine(lines[i].text) || !isDelimiterRow(lines[i+1].text) {
			continue
		}
		t := mdTable{header: splitRow(lines[i].text)}
		j := i + 2
		for ; j < len(lines) && isTableLine(lines[j].text); j++ {
			t.rows = append(t.rows, mdRow{line: lines[j].n, cells: splitRow(lines[j].text)})
		}
		tables = append(tables, t)
		i = j - 1
	}
	return tables
}

func hasColumns(header, columns []string) bool {
	for _, c := range columns {
		if !slices.Contains(header, c) {
			return false
		}
	}
	return true
}

func isTableLine(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "|") }

func isDelimiterRow(s string) bool {
	if !isTableLine(s) {
		return false
	}
	for _, c := range splitRow(s) {
		if !delimCellRe.MatchString(c) {
			return false
		}
	}
	return true
}

// splitRow returns the trimmed cells of a table row. As in GitHub Markdown,
// every pipe not escaped with a backslash separates cells, inside code
// spans too; `\|` stands for a pipe.
func splitRow(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, `\|`) {
		s = s[:len(s)-1]
	}
	var (
		cells []string
		cell  strings.Builder
	)
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			cell.WriteByte('|')
			i++
		case s[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(s[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// codeSpans returns the contents of the code spans of a cell.
func codeSpans(cell string) []string {
	var out []string
	for _, m := range codeSpanRe.FindAllStringSubmatch(cell, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

// tableIn finds the table with columns in the section heading of doc.
func tableIn(doc, heading string, columns ...string) (mdTable, error) {
	lines, err := section(doc, heading)
	if err != nil {
		return mdTable{}, err
	}
	t, err := findTable(lines, columns...)
	if err != nil {
		return mdTable{}, fmt.Errorf("under the heading %q: %w", heading, err)
	}
	return t, nil
}

// --- The layout table

// layoutRow is a path the layout table has a row for.
type layoutRow struct {
	path string // slash-separated, relative to the root, no trailing slash
	line int
}

// layoutRows reads the paths of the layout table of doc: the code spans of
// each row's Path cell, so that a cell may name several paths.
func layoutRows(doc string) ([]layoutRow, []string) {
	t, err := tableIn(doc, layoutHeading, layoutPathCol, layoutTextCol)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", developmentDoc, err)}
	}
	col := t.column(layoutPathCol)
	var (
		rows     []layoutRow
		problems []string
	)
	for _, r := range t.rows {
		paths := codeSpans(r.cell(col))
		if len(paths) == 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: the %s cell %q names no path in backticks",
				developmentDoc, r.line, layoutPathCol, r.cell(col)))
		}
		for _, p := range paths {
			rows = append(rows, layoutRow{path: cleanPath(p), line: r.line})
		}
	}
	return rows, problems
}

func cleanPath(p string) string {
	p = strings.TrimPrefix(strings.TrimSuffix(p, "/"), "./")
	if p == "" {
		return "."
	}
	return path.Clean(p)
}

// checkLayout reports every package directory without a row, and every row
// whose path fsys does not hold.
func checkLayout(fsys fs.FS, pkgs []string, rows []layoutRow) []string {
	var problems []string
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r.path] = true
		if _, err := fs.Stat(fsys, r.path); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: the layout table lists `%s`, which does not exist; remove the row or correct its path",
				developmentDoc, r.line, r.path))
		}
	}
	for _, dir := range pkgs {
		if listed[dir] {
			continue
		}
		contents := packageSynopsis(fsys, dir)
		if contents == "" {
			contents = "<what it holds>"
		}
		problems = append(problems, fmt.Sprintf("%s: the layout table (under %q) has no row for the Go package directory %s; add the row\n\t| `%s/` | %s |",
			developmentDoc, layoutHeading, dir, dir, contents))
	}
	return problems
}

// --- The RBAC table

// rbacKey is one resource of one API group; "" is the core group.
type rbacKey struct {
	group, resource string
}

func (k rbacKey) String() string {
	if k.group == "" {
		return "core `" + k.resource + "`"
	}
	return "`" + k.group + "` `" + k.resource + "`"
}

// verbOrder is the order verbs are listed in; it also holds every verb the
// RBAC table may name.
var verbOrder = []string{
	"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
	"impersonate", "bind", "escalate", "use", "approve", "sign", "attest", "*",
}

func sortVerbs(verbs []string) []string {
	out := slices.Clone(verbs)
	slices.SortFunc(out, func(a, b string) int {
		ia, ib := slices.Index(verbOrder, a), slices.Index(verbOrder, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// roleGrants reads a ClusterRole and returns the verbs it grants on each
// resource of each group.
func roleGrants(data []byte) (map[rbacKey][]string, error) {
	var role rbacv1.ClusterRole
	if err := utilyaml.UnmarshalStrict(data, &role); err != nil {
		return nil, fmt.Errorf("decoding the ClusterRole: %w", err)
	}
	grants := map[rbacKey][]string{}
	for _, rule := range role.Rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				k := rbacKey{group: g, resource: res}
				for _, v := range rule.Verbs {
					if !slices.Contains(grants[k], v) {
						grants[k] = append(grants[k], v)
					}
				}
			}
		}
	}
	if len(grants) == 0 {
		return nil, errors.New("the ClusterRole grants nothing on any resource")
	}
	return grants, nil
}

// rbacRow is what one row of the RBAC table grants: its verbs on each of
// its groups times its resources.
type rbacRow struct {
	line  int
	keys  []rbacKey
	verbs []string
}

// rbacRows reads the RBAC table of doc. The API group cell lists groups
// separated by commas, each in backticks or the word core; the Resources
// cell lists resources in backticks; the Verbs cell lists verbs separated
// by commas, spelled out (no "same", "all" or "every").
func rbacRows(doc string) ([]rbacRow, []string) {
	t, err := tableIn(doc, rbacHeading, rbacGroupCol, rbacResourceCol, rbacVerbsCol, rbacWhyCol)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", architectureDoc, err)}
	}
	gc, rc, vc := t.column(rbacGroupCol), t.column(rbacResourceCol), t.column(rbacVerbsCol)
	var (
		rows     []rbacRow
		problems []string
	)
	for _, r := range t.rows {
		row := rbacRow{line: r.line}
		groups, bad := parseGroups(r.cell(gc))
		for _, b := range bad {
			problems = append(problems, fmt.Sprintf("%s:%d: %q in the %s cell is neither core nor a group in backticks",
				architectureDoc, r.line, b, rbacGroupCol))
		}
		resources := codeSpans(r.cell(rc))
		if len(resources) == 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: the %s cell %q names no resource in backticks",
				architectureDoc, r.line, rbacResourceCol, r.cell(rc)))
		}
		for _, v := range strings.Split(r.cell(vc), ",") {
			v = strings.TrimSpace(v)
			if !slices.Contains(verbOrder, v) {
				problems = append(problems, fmt.Sprintf("%s:%d: %q in the %s cell is not a Kubernetes verb; list the verbs themselves, separated by commas",
					architectureDoc, r.line, v, rbacVerbsCol))
				continue
			}
			row.verbs = append(row.verbs, v)
		}
		for _, g := range groups {
			for _, res := range resources {
				row.keys = append(row.keys, rbacKey{group: g, resource: res})
			}
		}
		rows = append(rows, row)
	}
	return rows, problems
}

// parseGroups returns the groups of an API group cell, and the parts that
// are no group.
func parseGroups(cell string) (groups, bad []string) {
	for _, part := range strings.Split(cell, ",") {
		part = strings.TrimSpace(part)
		spans := codeSpans(part)
		switch {
		case part == "core":
			groups = append(groups, "")
		case len(spans) == 1 && part == "`"+spans[0]+"`":
			groups = append(groups, spans[0])
		default:
			bad = append(bad, part)
		}
	}
	return groups, bad
}

// checkRBAC reports every resource and verb granted but not in the table,
// and every one in the table but not granted.
func checkRBAC(grants map[rbacKey][]string, rows []rbacRow) []string {
	documented := map[rbacKey][]string{}
	lines := map[rbacKey][]int{}
	for _, r := range rows {
		for _, k := range r.keys {
			lines[k] = append(lines[k], r.line)
			for _, v := range r.verbs {
				if !slices.Contains(documented[k], v) {
					documented[k] = append(documented[k], v)
				}
			}
		}
	}

	var problems []string
	for _, k := range sortedKeys(grants) {
		verbs := sortVerbs(grants[k])
		if _, ok := lines[k]; !ok {
			problems = append(problems, fmt.Sprintf("%s: the RBAC table (under %q) has no row for %s, which %s grants; add the row\n\t| %s | `%s` | %s | <why the operator needs it> |",
				architectureDoc, rbacHeading, k, roleFile, groupCell(k.group), k.resource, strings.Join(verbs, ", ")))
			continue
		}
		if missing := difference(verbs, documented[k]); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s:%s: the RBAC table lacks the verbs %s on %s, which %s grants; add them to the %s cell (it grants %s)",
				architectureDoc, joinLines(lines[k]), strings.Join(missing, ", "), k, roleFile, rbacVerbsCol, strings.Join(verbs, ", ")))
		}
	}
	for _, k := range sortedKeys(documented) {
		granted, ok := grants[k]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s:%s: the RBAC table lists %s, which %s does not grant; remove it or correct its group or resource",
				architectureDoc, joinLines(lines[k]), k, roleFile))
			continue
		}
		if extra := difference(sortVerbs(documented[k]), granted); len(extra) > 0 {
			problems = append(problems, fmt.Sprintf("%s:%s: the RBAC table lists the verbs %s on %s, which %s does not grant; remove them",
				architectureDoc, joinLines(lines[k]), strings.Join(extra, ", "), k, roleFile))
		}
	}
	return problems
}

func groupCell(group string) string {
	if group == "" {
		return "core"
	}
	return "`" + group + "`"
}

// difference returns the elements of a that b lacks, in a's order.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys[V any](m map[rbacKey]V) []rbacKey {
	keys := make([]rbacKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rbacKey) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		return strings.Compare(a.resource, b.resource)
	})
	return keys
}

func joinLines(lines []int) string {
	s := make([]string, len(lines))
	for i, n := range lines {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// --- Tests of the checker itself

func TestSplitRowAndCodeSpans(t *testing.T) {
	for _, tc := range []struct {
		row   string
		cells []string
	}{
		{"| a | b |", []string{"a", "b"}},
		{"|a|b", []string{"a", "b"}},
		{"| `x` | y \\| z |", []string{"`x`", "y | z"}},
		{"  | `api/v1alpha1/` |  The API  |  ", []string{"`api/v1alpha1/`", "The API"}},
		{"| | empty |", []string{"", "empty"}},
	} {
		if got := splitRow(tc.row); !slices.Equal(got, tc.cells) {
			t.Errorf("splitRow(%q) = %q, want %q", tc.row, got, tc.cells)
		}
	}
	if got, want := codeSpans("`a/`, `b` and c, `  d `"), []string{"a/", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("codeSpans = %q, want %q", got, want)
	}
}

const sampleDoc = `# Title

## Layout

Some text.

` + "```" + `
## Not a heading
| Path | Contents |
` + "```" + `

| Other | Table |
|-------|-------|
| ` + "`nope/`" + ` | not this one |

| Path | Contents |
|------|----------|
| ` + "`a/`" + ` | package a |
| ` + "`b/c/`, `d`" + ` | two paths |

### Sub-section

| Path | Contents |
|------|----------|
| ` + "`sub/`" + ` | still under Layout |

## Next

| Path | Contents |
|------|----------|
| ` + "`outside/`" + ` | not under Layout |
`

func TestSectionAndFindTable(t *testing.T) {
	lines, err := section(sampleDoc, "Layout")
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, l := range lines {
		text = append(text, l.text)
	}
	joined := strings.Join(text, "\n")
	if !strings.Contains(joined, "`sub/`") || strings.Contains(joined, "`outside/`") {
		t.Errorf("the section runs to the next heading of its level, over sub-sections and fenced code:\n%s", joined)
	}

	tbl, err := findTable(lines, "Path", "Contents")
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.rows) != 2 || tbl.rows[0].cell(tbl.column("Path")) != "`a/`" {
		t.Errorf("found the wrong table: %+v", tbl)
	}
	if tbl.rows[0].line != 18 {
		t.Errorf("first row at line %d, want 18", tbl.rows[0].line)
	}

	if _, err := findTable(lines, "Path", "Missing"); err == nil {
		t.Error("a table with a missing column was found")
	}
	for _, h := range []string{"Absent", "Not a heading"} {
		if _, err := section(sampleDoc, h); err == nil {
			t.Errorf("section(%q) found a heading", h)
		}
	}
	if _, err := section(sampleDoc+"\n## Layout\n", "Layout"); err == nil {
		t.Error("a heading given twice was accepted")
	}
}

func TestGoPackageDirs(t *testing.T) {
	fsys := fstest.MapFS{
		"go.mod":                      {Data: []byte("module example.test\n")},
		"a/a.go":                      {Data: []byte("package a\n")},
		"a/m/m.go":                    {Data: []byte("package m\n")},
		"a/z.go":                      {Data: []byte("package a\n")},
		"b/c/c_test.go":               {Data: []byte("package c_test\n")},
		"b/README.md":                 {Data: []byte("no Go here\n")},
		"a/testdata/t.go":             {Data: []byte("package t\n")},
		"vendor/v/v.go":               {Data: []byte("package v\n")},
		".hidden/h.go":                {Data: []byte("package h\n")},
		"_output/o.go":                {Data: []byte("package o\n")},
		"bin/kwok/stages/s.go":        {Data: []byte("package s\n")},
		"hack/bin/tool.go":            {Data: []byte("package main\n")},
		"nested/go.mod":               {Data: []byte("module nested.test\n")},
		"nested/main.go":              {Data: []byte("package main\n")},
		"ignored/_scratch.go":         {Data: []byte("package x\n")},
		"notgo/file.gox":              {Data: []byte("x\n")},
		"nested/internal/deep/doc.go": {Data: []byte("package deep\n")},
	}
	got, err := goPackageDirs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "a/m", "b/c", "hack/bin", "nested", "nested/internal/deep"}
	if !slices.Equal(got, want) {
		t.Errorf("goPackageDirs = %q, want %q", got, want)
	}
}

func TestCheckLayout(t *testing.T) {
	fsys := fstest.MapFS{
		"a/a.go":       {Data: []byte("// Package a does the first thing. More text.\npackage a\n")},
		"b/c/c.go":     {Data: []byte("package c\n")},
		"watches.yaml": {Data: []byte("[]\n")},
	}
	pkgs := []string{"a", "b/c"}
	doc := func(rows ...string) string {
		return "# D\n\n## Layout\n\n| Path | Contents |\n|------|----------|\n" + strings.Join(rows, "\n") + "\n"
	}
	for _, tc := range []struct {
		name string
		doc  string
		want []string // one substring per expected problem, in order
	}{
		{
			name: "complete",
			doc:  doc("| `a/` | A |", "| `./b/c/` | C |", "| `watches.yaml` | a file |"),
		},
		{
			name: "a package without a row",
			doc:  doc("| `b/c/` | C |"),
			want: []string{"has no row for the Go package directory a; add the row\n\t| `a/` | Package a does the first thing. |"},
		},
		{
			name: "a package directory is not covered by its parent",
			doc:  doc("| `a/` | A |", "| `b/` | B |"),
			want: []string{"has no row for the Go package directory b/c;"},
		},
		{
			name: "a row for a path that does not exist",
			doc:  doc("| `a/` | A |", "| `b/c/` | C |", "| `gone/` | removed |"),
			want: []string{developmentDoc + ":9: the layout table lists `gone`, which does not exist"},
		},
		{
			name: "a row without a path in backticks",
			doc:  doc("| `a/` | A |", "| `b/c/` | C |", "| plain | text |"),
			want: []string{developmentDoc + ":9: the Path cell \"plain\" names no path in backticks"},
		},
		{
			name: "no layout section",
			doc:  "# D\n\n## Something else\n",
			want: []string{`no heading "Layout"`, "no row for the Go package directory a;", "no row for the Go package directory b/c;"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, problems := layoutRows(tc.doc)
			problems = append(problems, checkLayout(fsys, pkgs, rows)...)
			expectProblems(t, problems, tc.want)
		})
	}
}

const sampleRole = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- apiGroups:
  - ""
  resources:
  - pods
  verbs:
  - get
  - list
  - watch
- apiGroups:
  - ""
  - events.k8s.io
  resources:
  - events
  verbs:
  - create
  - patch
- apiGroups:
  - apps
  resources:
  - deployments
  - statefulsets
  verbs:
  - get
  - delete
`

func TestCheckRBAC(t *testing.T) {
	grants, err := roleGrants([]byte(sampleRole))
	if err != nil {
		t.Fatal(err)
	}
	if got := sortVerbs(grants[rbacKey{"events.k8s.io", "events"}]); !slices.Equal(got, []string{"create", "patch"}) {
		t.Fatalf("grants on events.k8s.io events = %q", got)
	}

	doc := func(rows ...string) string {
		return "# A\n\n## Security\n\n### RBAC\n\n| API group | Resources | Verbs | Why |\n|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n\n## Next\n"
	}
	pods := "| core | `pods` | get, list, watch | read pods |"
	events := "| core, `events.k8s.io` | `events` | create, patch | Events |"
	apps := "| `apps` | `deployments`, `statefulsets` | get, delete | workloads |"
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{name: "complete", doc: doc(pods, events, apps)},
		{
			name: "complete, split over rows",
			doc:  doc(pods, events, "| `apps` | `deployments`, `statefulsets` | get | read |", "| `apps` | `deployments`, `statefulsets` | delete | clean up |"),
		},
		{
			name: "a missing row",
			doc:  doc(events, apps),
			want: []string{"has no row for core `pods`, which " + roleFile + " grants; add the row\n\t| core | `pods` | get, list, watch | <why the operator needs it> |"},
		},
		{
			name: "a group missing from a row",
			doc:  doc(pods, "| core | `events` | create, patch | Events |", apps),
			want: []string{"no row for `events.k8s.io` `events`"},
		},
		{
			name: "a missing verb",
			doc:  doc("| core | `pods` | get, list | read pods |", events, apps),
			want: []string{architectureDoc + ":9: the RBAC table lacks the verbs watch on core `pods`"},
		},
		{
			name: "a verb not granted",
			doc:  doc("| core | `pods` | get, list, watch, delete | read pods |", events, apps),
			want: []string{architectureDoc + ":9: the RBAC table lists the verbs delete on core `pods`, which " + roleFile + " does not grant"},
		},
		{
			name: "a resource not granted",
			doc:  doc(pods, events, apps, "| `batch` | `jobs` | get | none |"),
			want: []string{architectureDoc + ":12: the RBAC table lists `batch` `jobs`, which " + roleFile + " does not grant"},
		},
		{
			name: "verbs not spelled out",
			doc:  doc(pods, events, "| `apps` | `deployments`, `statefulsets` | same | workloads |"),
			want: []string{`"same" in the Verbs cell is not a Kubernetes verb`, "lacks the verbs get, delete on `apps` `deployments`", "lacks the verbs get, delete on `apps` `statefulsets`"},
		},
		{
			name: "a group neither core nor in backticks",
			doc:  doc("| core-ish | `pods` | get, list, watch | read pods |", events, apps),
			want: []string{`"core-ish" in the API group cell is neither core nor a group in backticks`, "no row for core `pods`"},
		},
		{
			name: "no RBAC table",
			doc:  "# A\n\n### RBAC\n\nNo table.\n",
			want: []string{"no table with the columns", "no row for core `events`", "no row for core `pods`", "no row for `apps` `deployments`", "no row for `apps` `statefulsets`", "no row for `events.k8s.io` `events`"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, problems := rbacRows(tc.doc)
			problems = append(problems, checkRBAC(grants, rows)...)
			expectProblems(t, problems, tc.want)
		})
	}

	if _, err := roleGrants([]byte("kind: ClusterRole\nrules: []\n")); err == nil {
		t.Error("a role granting nothing was accepted")
	}
	if _, err := roleGrants([]byte("kind: ClusterRole\nrulez: []\n")); err == nil {
		t.Error("a role with an unknown field was accepted")
	}
}

// expectProblems checks that problems are as many as want and that each
// holds the substring of want at its index.
func expectProblems(t *testing.T, problems, want []string) {
	t.Helper()
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	for i, p := range problems {
		if !strings.Contains(p, want[i]) {
			t.Errorf("problem %d:\n%s\ndoes not contain\n%s", i, p, want[i])
		}
	}
}
