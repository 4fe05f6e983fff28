// Command sizes fails when a hand-written, non-test Go file of the
// repository is over 500 lines or holds a function over 80: the limits
// issue 36 set so that a sync can be read a screen at a time. Generated
// code (zz_generated files, pkg/generated) is not counted.
//
//	go run ./hack/sizes [DIR]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	maxFileLines = 500
	maxFuncLines = 80
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sizes: %v\n", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "sizes: %s\n", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("sizes: no hand-written non-test Go file over %d lines, no function over %d\n", maxFileLines, maxFuncLines)
}

// check lists every file and function under root over its limit.
func check(root string) ([]string, error) {
	var problems []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(root, path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it by concern", path, n, maxFileLines))
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				problems = append(problems, fmt.Sprintf("%s:%d: %s is %d lines, over %d: give a part of it a name of its own", path, start.Line, funcName(fn), n, maxFuncLines))
			}
		}
		return nil
	})
	return problems, err
}

// skipDir: what is not hand-written Go of the repository.
func skipDir(root, path, name string) bool {
	if path == root {
		return false
	}
	rel, _ := filepath.Rel(root, path)
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" ||
		filepath.ToSlash(rel) == "pkg/generated"
}

// funcName is Recv.Name for a method, Name otherwise.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
