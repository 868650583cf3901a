package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// controllersDir is the package whose doc.go lists every file.
const controllersDir = "controllers"

// TestControllersDocListsEveryFile fails when a file of controllers/ (tests
// aside) is not named in controllers/doc.go, or when doc.go names a file
// that does not exist: a newcomer finds every controller, and what each
// file holds, from the package comment.
func TestControllersDocListsEveryFile(t *testing.T) {
	fsys := os.DirFS(reporoot.Must(t))
	doc, err := packageComment(fsys, path.Join(controllersDir, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fileListProblems(fsys, controllersDir, doc) {
		t.Error(p)
	}
}

// goFileName is a Go file's name as a package comment names it.
var goFileName = regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)

// fileListProblems compares the Go files of dir, tests and doc.go aside,
// with the files doc names.
func fileListProblems(fsys fs.FS, dir, doc string) []string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return []string{err.Error()}
	}
	named := goFileName.FindAllString(doc, -1)
	var problems []string
	files := map[string]bool{}
	for _, e := range entries {
		if !isGoFile(e) || strings.HasSuffix(e.Name(), "_test.go") || e.Name() == "doc.go" {
			continue
		}
		files[e.Name()] = true
		if !slices.Contains(named, e.Name()) {
			problems = append(problems, fmt.Sprintf("%s/doc.go does not name %s: add a line that says what it holds", dir, e.Name()))
		}
	}
	for _, n := range named {
		if !files[n] {
			problems = append(problems, fmt.Sprintf("%s/doc.go names %s, which %s does not hold", dir, n, dir))
		}
	}
	return problems
}

// The claims about importers a package comment can make in a form this
// test checks: "Imported by a, b and c." names, by their paths in the
// repository, every package whose non-test code imports it; "nothing
// imports it" says that none does.
var (
	importedByClaim = regexp.MustCompile(`Imported by ([^.:;]*)[.:;]`)
	importerList    = regexp.MustCompile(`^[a-z0-9/_-]+((, | and )[a-z0-9/_-]+)*$`)
	nothingImports  = regexp.MustCompile(`(?i)\bnothing imports it\b`)
)

// TestPackageDocsNameTheirImporters fails when a package comment's claim
// about who imports the package (importedByClaim, nothingImports) differs
// from the imports go list reports.
func TestPackageDocsNameTheirImporters(t *testing.T) {
	root := reporoot.Must(t)
	importers, err := nonTestImporters(root)
	if err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(root)
	for dir := range importers {
		doc, err := packageComment(fsys, path.Join(dir, "doc.go"))
		if err != nil {
			continue // TestEveryPackageSaysWhatItOwnsInDocGo reports it
		}
		for _, p := range importerClaimProblems(dir, doc, importers) {
			t.Error(p)
		}
	}
}

// importerClaimProblems checks the claims of doc, the comment of package
// dir, against importers.
func importerClaimProblems(dir, doc string, importers map[string][]string) []string {
	doc = strings.Join(strings.Fields(doc), " ")
	got := importers[dir]
	var problems []string
	if nothingImports.MatchString(doc) && len(got) > 0 {
		problems = append(problems, fmt.Sprintf("%s/doc.go says nothing imports it, but %s do", dir, strings.Join(got, ", ")))
	}
	for _, m := range importedByClaim.FindAllStringSubmatch(doc, -1) {
		if !importerList.MatchString(m[1]) {
			problems = append(problems, fmt.Sprintf("%s/doc.go: %q is no list of package paths (\"Imported by a, b and c.\")", dir, m[0]))
			continue
		}
		claimed := splitList(m[1])
		for _, c := range claimed {
			if _, ok := importers[c]; !ok {
				problems = append(problems, fmt.Sprintf("%s/doc.go says it is imported by %s, which is no package of the repository", dir, c))
			}
		}
		slices.Sort(claimed)
		if !slices.Equal(claimed, got) {
			problems = append(problems, fmt.Sprintf("%s/doc.go says it is imported by %s; go list says by %s", dir, strings.Join(claimed, ", "), strings.Join(got, ", ")))
		}
	}
	return problems
}

// splitList splits "a, b and c" into its items.
func splitList(s string) []string {
	var items []string
	for _, part := range strings.Split(s, ", ") {
		for _, item := range strings.Split(part, " and ") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	}
	return items
}

// nonTestImporters maps every package of the module, by its path in the
// repository, to the sorted packages whose non-test code imports it.
func nonTestImporters(root string) (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Module.Path}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	importers := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		module := f[1] + "/"
		pkg := strings.TrimPrefix(f[0], module)
		if _, ok := importers[pkg]; !ok {
			importers[pkg] = nil
		}
		for _, imp := range f[2:] {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				importers[dep] = append(importers[dep], pkg)
			}
		}
	}
	for pkg := range importers {
		slices.Sort(importers[pkg])
	}
	return importers, nil
}

func TestImporterClaimProblems(t *testing.T) {
	importers := map[string][]string{
		"a":   {"b", "c/d"},
		"b":   nil,
		"c/d": nil,
	}
	tests := []struct {
		name, dir, doc string
		problems       int
	}{
		{"right", "a", "Package a.\nImported by b and\nc/d.", 0},
		{"right in another order", "a", "Imported by c/d, b: both.", 0},
		{"one missing", "a", "Imported by b.", 1},
		{"one too many", "a", "Imported by b, c/d and x.", 2},
		{"not a list", "a", "Imported by b (mostly), c/d.", 1},
		{"nothing, rightly", "b", "Tests only: nothing imports it.", 0},
		{"nothing, wrongly", "a", "Nothing imports it.", 1},
		{"no claim", "a", "It must not import cmd.", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := importerClaimProblems(tt.dir, tt.doc, importers); len(got) != tt.problems {
				t.Errorf("got %d problems, want %d: %q", len(got), tt.problems, got)
			}
		})
	}
}

func TestFileListProblems(t *testing.T) {
	fsys := fstest.MapFS{
		"c/doc.go":    {Data: []byte("package c\n")},
		"c/a.go":      {Data: []byte("package c\n")},
		"c/b.go":      {Data: []byte("package c\n")},
		"c/b_test.go": {Data: []byte("package c\n")},
	}
	if got := fileListProblems(fsys, "c", "a.go and b.go"); len(got) != 0 {
		t.Errorf("every file named: %q", got)
	}
	if got := fileListProblems(fsys, "c", "a.go and gone.go"); len(got) != 2 {
		t.Errorf("b.go missing and gone.go named: got %q", got)
	}
}
