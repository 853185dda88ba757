package gen

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// namer hands out package-level identifiers that collide with nothing the
// package already declares.
type namer struct{ taken map[string]bool }

func (n *namer) fresh(base string) string {
	name := base
	for i := 2; n.taken[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	n.taken[name] = true
	return name
}

// fixedImports are the packages the generated code itself uses, in the
// order their names are chosen.
var fixedImports = []struct{ path, name string }{
	{"context", "context"},
	{"encoding/json", "json"},
	{"errors", "errors"},
	{"fmt", "fmt"},
	{"slices", "slices"},
	{"sync/atomic", "atomic"},
	{"time", "time"},
	{runtimePath, "runtime"},
}

// localNames are the local identifiers of the generated helper functions;
// no import may take them.
var localNames = []string{"args", "b", "call", "ctx", "def", "err", "ev", "k", "keys", "m", "ok", "r", "recv", "register", "rt", "shardBy", "tx", "uniqueKey", "v"}

// plan names everything the generated file declares and imports, and
// reports generated names that would collide with the user's declarations.
type plan struct {
	imports  map[string]string // package path → its name in the generated file
	real     map[string]string // package path → its package name
	reserved map[string]bool   // names a wrapper parameter must not take
	internal struct {
		runtime, submit, key, unbound string
	}
	register string // ArgoRegister, if the package has annotated functions
}

// claimNames names the wrappers and registration functions, and reports
// those that would collide with the user's declarations.
func (c *checker) claimNames() {
	scope := c.pkg.Scope()
	exported := map[string]string{} // generated package-level name → what it belongs to
	claim := func(pos token.Pos, name, what string) {
		if obj := scope.Lookup(name); obj != nil {
			c.at(pos, "%s: the generated %s would collide with the %s %s declared at %s; rename one", name, what, objKind(obj), name, c.shortPos(obj.Pos()))
		} else if other, dup := exported[name]; dup {
			c.at(pos, "%s: the generated %s would collide with the generated %s", name, what, other)
		}
		exported[name] = what
	}
	for _, t := range c.tasks {
		t.wrapper, t.wrapperTx = t.fn.Name()+"Durable", t.fn.Name()+"DurableTx"
		t.wrapperAfter = t.fn.Name() + "DurableAfter"
		pos := t.decl.Name.Pos()
		if t.recv == nil {
			claim(pos, t.wrapper, "wrapper of "+t.display())
			claim(pos, t.wrapperTx, "transactional wrapper of "+t.display())
			claim(pos, t.wrapperAfter, "dependent wrapper of "+t.display())
			continue
		}
		for _, w := range []string{t.wrapper, t.wrapperTx, t.wrapperAfter} {
			obj, index, _ := types.LookupFieldOrMethod(types.NewPointer(t.recv.named), false, c.pkg, w)
			if obj != nil && len(index) == 1 {
				c.at(pos, "%s: the generated wrapper method would collide with the %s %s.%s declared at %s; rename one", w, fieldOrMethod(obj), t.recv.obj.Name(), w, c.shortPos(obj.Pos()))
			}
		}
	}
	for _, t := range c.tasks {
		if t.recv == nil {
			c.register = "ArgoRegister"
			claim(t.decl.Name.Pos(), c.register, "registration function")
			break
		}
	}
	for _, r := range c.recvs {
		if len(r.tasks) > 0 {
			r.register = "ArgoRegister" + upperFirst(r.obj.Name())
			claim(r.tasks[0].decl.Name.Pos(), r.register, "registration function of "+r.obj.Name())
		}
	}
}

// plan names the internal identifiers and the imports of the generated file.
func (c *checker) plan() *plan {
	n := &namer{taken: map[string]bool{}}
	for _, name := range c.pkg.Scope().Names() {
		n.taken[name] = true
	}
	for _, t := range c.tasks {
		n.taken[t.wrapper], n.taken[t.wrapperTx], n.taken[t.wrapperAfter] = true, true, true
	}
	n.taken[c.register] = true
	for _, r := range c.recvs {
		n.taken[r.register] = true
	}
	p := &plan{imports: map[string]string{}, real: map[string]string{}, reserved: map[string]bool{"ctx": true, "tx": true, "after": true, "err": true}, register: c.register}

	in := &p.internal
	in.runtime, in.submit = n.fresh("argoRuntime"), n.fresh("argoSubmit")
	in.key, in.unbound = n.fresh("argoKey"), n.fresh("argoUnbound")
	for _, r := range c.recvs {
		r.recvVar = n.fresh("argoRecv" + upperFirst(r.obj.Name()))
	}
	for _, t := range c.tasks {
		base := upperFirst(t.fn.Name())
		if t.recv != nil {
			base = upperFirst(t.recv.obj.Name()) + upperFirst(t.fn.Name())
		}
		t.defVar, t.argsType = n.fresh("argoTask"+base), n.fresh("argoArgs"+base)
	}
	for name := range n.taken {
		if strings.HasPrefix(name, "argo") {
			p.reserved[name] = true
		}
	}

	// Imports: the package's own name unless the package, a generated name
	// or a generated local already uses it.
	for _, name := range localNames {
		n.taken[name] = true
	}
	for _, name := range types.Universe.Names() {
		n.taken[name] = true
	}
	for _, fi := range fixedImports {
		p.imports[fi.path], p.real[fi.path] = n.fresh(fi.name), fi.name
	}
	for _, pkg := range c.typePackages() {
		if _, done := p.imports[pkg.Path()]; !done {
			p.imports[pkg.Path()], p.real[pkg.Path()] = n.fresh(pkg.Name()), pkg.Name()
		}
	}
	for _, name := range p.imports {
		p.reserved[name] = true
	}

	for _, t := range c.tasks {
		c.nameParams(t, p.reserved)
	}
	return p
}

// typePackages lists the other packages the parameter types name, by path.
func (c *checker) typePackages() []*types.Package {
	seen := map[string]*types.Package{}
	var visit func(t types.Type)
	visit = func(t types.Type) {
		switch u := t.(type) {
		case *types.Alias:
			if o := u.Obj(); o.Pkg() != nil && (o.Exported() || o.Pkg() == c.pkg) && u.TypeArgs().Len() == 0 {
				seen[o.Pkg().Path()] = o.Pkg()
				return
			}
			visit(types.Unalias(u))
		case *types.Named:
			if p := u.Obj().Pkg(); p != nil {
				seen[p.Path()] = p
			}
			for a := range u.TypeArgs().Types() {
				visit(a)
			}
		case *types.Pointer:
			visit(u.Elem())
		case *types.Slice:
			visit(u.Elem())
		case *types.Array:
			visit(u.Elem())
		case *types.Map:
			visit(u.Key())
			visit(u.Elem())
		case *types.Struct:
			for f := range u.Fields() {
				visit(f.Type())
			}
		case *types.Signature:
			for v := range u.Params().Variables() {
				visit(v.Type())
			}
		}
	}
	for _, t := range c.tasks {
		visit(t.fn.Signature())
		for _, h := range []*hook{t.fallback, t.action} {
			if h != nil {
				visit(h.fn.Signature())
			}
		}
	}
	delete(seen, c.pkg.Path())
	var out []*types.Package
	for _, p := range seen {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *types.Package) int { return strings.Compare(a.Path(), b.Path()) })
	return out
}

// nameParams chooses the argument struct fields, JSON keys and wrapper
// parameter names of t.
func (c *checker) nameParams(t *task, reserved map[string]bool) {
	fields, wraps := map[string]bool{}, map[string]bool{}
	unique := func(used map[string]bool, base string) string {
		name := base
		for j := 2; used[name]; j++ {
			name = fmt.Sprintf("%s_%d", base, j)
		}
		used[name] = true
		return name
	}
	named := func(p *param) bool { return p.name != "" && p.name != "_" }
	// Keys and fields first, then wrapper names: declared names keep theirs,
	// and only then do the others get p<index>.
	for _, p := range t.params {
		p.key = fmt.Sprintf("p%d", p.index)
		field := fmt.Sprintf("P%d", p.index)
		if named(p) {
			p.key = p.name
			if field = upperFirst(p.name); !token.IsExported(field) {
				field = "P" + p.name
			}
		}
		p.field = unique(fields, field)
		if named(p) && !reserved[p.name] {
			p.wrap = unique(wraps, p.name)
		}
	}
	for _, p := range t.params {
		if p.wrap == "" {
			p.wrap = unique(wraps, fmt.Sprintf("p%d", p.index))
		}
	}
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func fieldOrMethod(obj types.Object) string {
	if _, ok := obj.(*types.Var); ok {
		return "field"
	}
	return "method"
}
