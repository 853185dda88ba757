package runtime

import (
	"go/ast"
	"sort"
	"testing"
)

// TestRuntimeTypesAreNotInternalAliases: every exported type of runtime is
// declared in runtime or is an alias of argotype's type of its name, so
// that `go doc` shows its fields to a user, who cannot import internal
// packages (a `type X = storage.X` shows only that line).
func TestRuntimeTypesAreNotInternalAliases(t *testing.T) {
	decls := topLevelDecls(t, ".")
	names := make([]string, 0, len(decls))
	for name := range decls {
		names = append(names, name)
	}
	sort.Strings(names)
	types := 0
	for _, name := range names {
		spec, ok := decls[name].(*ast.TypeSpec)
		if !ok {
			continue
		}
		types++
		if spec.Assign.IsValid() && !isAliasOf(spec, name) {
			t.Errorf("runtime.%s is an alias of a type declared elsewhere: declare it in runtime, or in argotype and alias it as `type %s = argotype.%s`", name, name, name)
		}
	}
	if types < 20 {
		t.Fatalf("found only %d exported types in runtime; the parse missed declarations", types)
	}
}
