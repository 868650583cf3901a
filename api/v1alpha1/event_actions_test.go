package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestEveryEventReasonHasAnAction(t *testing.T) {
	reasons := eventReasonConstants(t)
	if len(reasons) == 0 {
		t.Fatal("found no EventReason constant")
	}
	defined := map[string]bool{}
	for name, reason := range reasons {
		defined[reason] = true
		if _, ok := eventActions[reason]; !ok {
			t.Errorf("%s (%q) has no action in eventActions", name, reason)
		}
	}
	for reason := range eventActions {
		if !defined[reason] {
			t.Errorf("eventActions maps %q, which is no EventReason constant of the package", reason)
		}
	}
}

func TestEventActionOfAnUnknownReason(t *testing.T) {
	if got := EventAction("ValueOverridden"); got != EventActionReconciling {
		t.Errorf("EventAction(ValueOverridden) = %q, want %q", got, EventActionReconciling)
	}
	if got := EventAction(EventReasonReleaseUpgradeFailed); got != EventActionUpgradingRelease {
		t.Errorf("EventAction(%s) = %q, want %q", EventReasonReleaseUpgradeFailed, got, EventActionUpgradingRelease)
	}
}

// eventReasonConstants reads the package's source for its EventReason
// constants and their values.
func eventReasonConstants(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	exprs := map[string]ast.Expr{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		collectConstants(f, exprs)
	}
	reasons := map[string]string{}
	for name := range exprs {
		if !strings.HasPrefix(name, "EventReason") {
			continue
		}
		value, ok := constantString(exprs, name)
		if !ok {
			t.Fatalf("cannot read the value of %s", name)
		}
		reasons[name] = value
	}
	return reasons
}

func collectConstants(f *ast.File, exprs map[string]ast.Expr) {
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					exprs[name.Name] = vs.Values[i]
				}
			}
		}
	}
}

// constantString evaluates a string constant given as a literal or as
// another constant of the package.
func constantString(exprs map[string]ast.Expr, name string) (string, bool) {
	switch e := exprs[name].(type) {
	case *ast.BasicLit:
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.Ident:
		return constantString(exprs, e.Name)
	default:
		return "", false
	}
}
