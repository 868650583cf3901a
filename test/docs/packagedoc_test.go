package docs_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestEveryPackageSaysWhatItOwnsInDocGo fails when a Go package directory
// has no doc.go, when its doc.go has no package comment or does not say
// what the package may not import (or who may import it), or when another
// of its files carries a package comment too: a reader finds what a
// package owns in one place.
func TestEveryPackageSaysWhatItOwnsInDocGo(t *testing.T) {
	fsys := os.DirFS(reporoot.Must(t))
	pkgs, err := goPackageDirs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range pkgs {
		for _, p := range packageDocProblems(fsys, dir) {
			t.Error(p)
		}
	}
}

// packageDocProblems checks the package comments of the Go files of dir.
func packageDocProblems(fsys fs.FS, dir string) []string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	hasDoc := false
	for _, e := range entries {
		if !isGoFile(e) || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		doc, err := packageComment(fsys, path.Join(dir, e.Name()))
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case e.Name() == "doc.go":
			hasDoc = true
			if doc == "" {
				problems = append(problems, fmt.Sprintf("%s/doc.go has no package comment: say what the package owns and what it must not import", dir))
			} else if !strings.Contains(doc, "import") {
				problems = append(problems, fmt.Sprintf("%s/doc.go does not say what the package must not import, or who imports it", dir))
			}
		case doc != "":
			problems = append(problems, fmt.Sprintf("%s/%s has a package comment: move it to %s/doc.go", dir, e.Name(), dir))
		}
	}
	if !hasDoc {
		problems = append(problems, fmt.Sprintf("%s has no doc.go: add one that says in a few lines what the package owns and what it must not import", dir))
	}
	return problems
}

// packageComment is the package comment of the Go file name, "" when it
// has none.
func packageComment(fsys fs.FS, name string) (string, error) {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return "", err
	}
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return "", err
	}
	if f.Doc == nil {
		return "", nil
	}
	return f.Doc.Text(), nil
}
