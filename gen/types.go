package gen

import (
	"fmt"
	"go/token"
	"go/types"
	"reflect"
	"strings"
)

// runtimePath is the package generated code uses. argotypePath is where the
// shared types it re-exports are declared: runtime.AlertEvent is an alias of
// argotype.AlertEvent, so a hook's parameter type resolves to the latter.
const (
	runtimePath  = "github.com/argo-retry/argo/runtime"
	argotypePath = "github.com/argo-retry/argo/argotype"
)

// isContext reports whether t is context.Context.
func isContext(t types.Type) bool { return isNamed(t, "context", "Context") }

// isNamed reports whether t (aliases resolved) is the named type path.name.
func isNamed(t types.Type, path, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == path && n.Obj().Name() == name
}

// hasMethod reports whether t or *t has an exported method name.
func hasMethod(t types.Type, name string) bool {
	if _, ok := types.Unalias(t).(*types.Pointer); !ok {
		t = types.NewPointer(t)
	}
	return types.NewMethodSet(t).Lookup(nil, name) != nil
}

// customJSON reports whether *t decodes itself (json.Unmarshaler or
// encoding.TextUnmarshaler), like time.Time: its fields are its own business.
func customJSON(t types.Type) bool {
	return hasMethod(t, "UnmarshalJSON") || hasMethod(t, "UnmarshalText")
}

// unstorable says why values of t cannot round-trip through encoding/json
// (the stored form of arguments), or returns "".
func (c *checker) unstorable(t types.Type) string {
	return c.walk(t, map[*types.Named]bool{})
}

func (c *checker) walk(t types.Type, seen map[*types.Named]bool) string {
	switch u := t.(type) {
	case *types.Alias:
		return c.walk(types.Unalias(u), seen)
	case *types.TypeParam:
		return "type parameters are not supported"
	case *types.Named:
		if seen[u] {
			return ""
		}
		seen[u] = true
		if types.IsInterface(u) {
			return fmt.Sprintf("%s is an interface type: a stored call cannot say which concrete type to decode; use a concrete type", c.typeString(u))
		}
		if customJSON(u) {
			return ""
		}
		return c.walk(u.Underlying(), seen)
	case *types.Basic:
		switch {
		case u.Kind() == types.Invalid:
			return "it does not type-check" + c.firstTypeError()
		case u.Kind() == types.UnsafePointer:
			return "unsafe.Pointer cannot be stored"
		case u.Info()&types.IsComplex != 0:
			return "complex numbers have no JSON encoding"
		}
		return ""
	case *types.Pointer:
		return c.walk(u.Elem(), seen)
	case *types.Slice:
		return c.walk(u.Elem(), seen)
	case *types.Array:
		return c.walk(u.Elem(), seen)
	case *types.Map:
		if !mapKeyOK(u.Key()) {
			return fmt.Sprintf("map key type %s has no JSON encoding (want a string, an integer or an encoding.TextMarshaler)", c.typeString(u.Key()))
		}
		return c.walk(u.Elem(), seen)
	case *types.Chan:
		return "a channel cannot be stored"
	case *types.Signature:
		return "a function cannot be stored"
	case *types.Interface:
		return "an interface type: a stored call cannot say which concrete type to decode; use a concrete type"
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			if reflect.StructTag(u.Tag(i)).Get("json") == "-" {
				continue
			}
			if !f.Exported() && !(f.Embedded() && isStruct(f.Type())) {
				return fmt.Sprintf("field %s is unexported: encoding/json would drop it; export it, or tag it `json:\"-\"` if it need not be stored", f.Name())
			}
			if why := c.walk(f.Type(), seen); why != "" {
				return "field " + f.Name() + ": " + why
			}
		}
		return ""
	}
	return fmt.Sprintf("%T is not supported", t)
}

// isStruct reports whether t or *t is a struct type (what encoding/json
// flattens when embedded, even unexported).
func isStruct(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

// mapKeyOK reports whether encoding/json encodes and decodes map keys of type k.
func mapKeyOK(k types.Type) bool {
	if b, ok := k.Underlying().(*types.Basic); ok && b.Info()&(types.IsString|types.IsInteger) != 0 {
		return true
	}
	return types.NewMethodSet(k).Lookup(nil, "MarshalText") != nil && hasMethod(k, "UnmarshalText")
}

func (c *checker) firstTypeError() string {
	if len(c.l.typeErrors) == 0 {
		return ""
	}
	return " (" + c.l.typeErrors[0].Msg + ")"
}

// typeErrorIn returns the first type error between from and to, or the
// package's first type error.
func (c *checker) typeErrorIn(from, to token.Pos) string {
	a, b := c.fset.Position(from), c.fset.Position(to)
	for _, e := range c.l.typeErrors {
		p := parsePos(e.Pos)
		if p.Filename == a.Filename && (p.Line > a.Line || p.Line == a.Line && p.Column >= a.Column) && (p.Line < b.Line || p.Line == b.Line && p.Column <= b.Column) {
			return e.Msg
		}
	}
	if len(c.l.typeErrors) > 0 {
		return c.l.typeErrors[0].Msg
	}
	return "unknown type error"
}

// qualifier prints types of other packages by package name, the user's own unqualified.
func (c *checker) qualifier(p *types.Package) string {
	if p == c.pkg {
		return ""
	}
	return p.Name()
}

func (c *checker) typeString(t types.Type) string { return types.TypeString(t, c.qualifier) }

func (c *checker) tupleString(t *types.Tuple) string {
	switch t.Len() {
	case 0:
		return "nothing"
	case 1:
		return c.typeString(t.At(0).Type())
	}
	return c.typeString(t)
}

// paramsString prints params from index start as (a T, b U).
func (c *checker) paramsString(t *types.Tuple, variadic bool, start int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i := start; i < t.Len(); i++ {
		if i > start {
			b.WriteString(", ")
		}
		v := t.At(i)
		if v.Name() != "" {
			b.WriteString(v.Name() + " ")
		}
		if variadic && i == t.Len()-1 {
			b.WriteString("..." + c.typeString(v.Type().(*types.Slice).Elem()))
		} else {
			b.WriteString(c.typeString(v.Type()))
		}
	}
	b.WriteByte(')')
	return b.String()
}
