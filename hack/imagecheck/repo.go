package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
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

// goFiles lists the context-relative files that building pkg (a package
// path relative to the module root at root) reads for goos/goarch with cgo
// off: go.mod, go.sum and the Go and embedded files of every package of the
// module it imports.
func goFiles(root, pkg, goos, goarch string) ([]string, error) {
	cmd := exec.Command("go", "list", "-deps",
		"-f", `{{if and .Module .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}`,
		pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w: %s", pkg, err, stderr.String())
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	files := []string{"go.mod"}
	if _, err := os.Stat(filepath.Join(root, "go.sum")); err == nil {
		files = append(files, "go.sum")
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		rel, err := filepath.Rel(abs, sc.Text())
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("go list: %s is outside %s", sc.Text(), abs)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
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
