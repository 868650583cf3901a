package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// watch is one entry of watches.yaml.
type watch struct {
	Group   string `yaml:"group"`
	Version string `yaml:"version"`
	Kind    string `yaml:"kind"`
	Chart   string `yaml:"chart"`
}

func parseWatches(data []byte) ([]watch, error) {
	var ws []watch
	if err := yaml.Unmarshal(data, &ws); err != nil {
		return nil, fmt.Errorf("decoding the watches file: %w", err)
	}
	for _, w := range ws {
		if w.Chart == "" {
			return nil, fmt.Errorf("the watches entry of %s has no chart", w.Kind)
		}
	}
	return ws, nil
}

// watchesFlagDefault reads, from the manager's main.go, the default of its
// --watches-file flag: the path, relative to its working directory, that the
// manager reads watches.yaml from. The default is a string literal, or the
// last argument of a call such as envOr("WATCHES_FILE", "watches.yaml").
func watchesFlagDefault(mainGo string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, mainGo, nil, 0)
	if err != nil {
		return "", err
	}
	var found string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" {
			return found == ""
		}
		// flag.StringVar(&v, "watches-file", def, usage) or
		// flag.String("watches-file", def, usage)
		i := slices.IndexFunc(call.Args, func(e ast.Expr) bool {
			s, ok := stringLit(e)
			return ok && s == "watches-file"
		})
		if i < 0 || i+1 >= len(call.Args) {
			return true
		}
		def := call.Args[i+1]
		if inner, ok := def.(*ast.CallExpr); ok && len(inner.Args) > 0 {
			def = inner.Args[len(inner.Args)-1]
		}
		if s, ok := stringLit(def); ok {
			found = s
		}
		return false
	})
	if found == "" {
		return "", fmt.Errorf("%s: found no default for the watches-file flag", mainGo)
	}
	return found, nil
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// relTo returns p relative to dir, both absolute and clean; ok is false
// when p is not under dir.
func relTo(dir, p string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), true
	}
	if p == dir {
		return ".", true
	}
	if strings.HasPrefix(p, dir+"/") {
		return strings.TrimPrefix(p, dir+"/"), true
	}
	return "", false
}
