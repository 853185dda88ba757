package runtime

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// topLevelDecls maps each exported top-level name declared in the non-test
// files of dir (methods excluded) to its declaration: a *ast.TypeSpec,
// *ast.ValueSpec or *ast.FuncDecl.
func topLevelDecls(t *testing.T, dir string) map[string]ast.Node {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	decls := map[string]ast.Node{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					decls[d.Name.Name] = d
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							decls[s.Name.Name] = s
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								decls[n.Name] = s
							}
						}
					}
				}
			}
		}
	}
	return decls
}

// TestRuntimeReexportsArgotype checks that every exported name of package
// argotype is also a name of package runtime, so code written against
// runtime (generated code included) sees each shared type, constant and
// function, and that each shared type is an alias (runtime.State is
// argotype.State), not a distinct type that would not convert silently.
func TestRuntimeReexportsArgotype(t *testing.T) {
	shared := topLevelDecls(t, filepath.Join("..", "argotype"))
	own := topLevelDecls(t, ".")
	names := make([]string, 0, len(shared))
	for name := range shared {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		decl, ok := own[name]
		if !ok {
			t.Errorf("argotype.%s is not re-exported by runtime: declare it in runtime from argotype.%s", name, name)
			continue
		}
		if _, isType := shared[name].(*ast.TypeSpec); !isType {
			continue
		}
		if !isAliasOf(decl, name) {
			t.Errorf("runtime.%s must be declared as the alias `type %s = argotype.%s`", name, name, name)
		}
	}
	if len(names) < 30 {
		t.Fatalf("found only %d exported names in argotype; the parse missed declarations: %v", len(names), names)
	}
}

// isAliasOf reports whether decl is `type name = argotype.name`.
func isAliasOf(decl ast.Node, name string) bool {
	spec, ok := decl.(*ast.TypeSpec)
	if !ok || !spec.Assign.IsValid() {
		return false
	}
	sel, ok := spec.Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "argotype" && sel.Sel.Name == name
}
