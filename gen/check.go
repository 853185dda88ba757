package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// task is one checked //argo:retry function or method.
type task struct {
	decl     *ast.FuncDecl
	fn       *types.Func
	spec     *spec
	name     string    // task name
	recv     *recvType // nil for a plain function
	ptrRecv  bool      // the method has a pointer receiver
	hasCtx   bool      // the first parameter is a context.Context
	params   []*param  // the parameters after the context
	variadic bool

	fallback, action  *hook
	shardBy, uniqueBy *param
	tenantBy          *param // its fmt.Sprint is the call's tenant (runtime.GeneratedCall.Tenant)
	orderBy           *param // order-by= (order_key.go)

	// Identifiers of the generated code.
	wrapper, wrapperTx string // FDurable, FDurableTx
	wrapperAfter       string // FDurableAfter (after.go)
	defVar, argsType   string // the TaskDef variable, the argument struct
}

// display names the function as messages and operators see it: F, (*T).M or T.M.
func (t *task) display() string {
	if t.recv == nil {
		return t.fn.Name()
	}
	if t.ptrRecv {
		return "(*" + t.recv.obj.Name() + ")." + t.fn.Name()
	}
	return t.recv.obj.Name() + "." + t.fn.Name()
}

// recvType is a named type with annotated methods.
type recvType struct {
	obj      *types.TypeName
	named    *types.Named
	ptr      bool   // ArgoRegister<T> takes a *T (some method has a pointer receiver)
	register string // ArgoRegister<T>
	recvVar  string // the package variable holding the bound receiver
	tasks    []*task
}

// param is one stored parameter.
type param struct {
	name  string // as declared; "" when unnamed
	index int    // among all parameters, the context included
	typ   types.Type
	pos   token.Pos
	field string // its field in the argument struct
	key   string // its JSON key
	wrap  string // its name in the wrappers
}

// hook is a resolved fallback or alert action.
type hook struct {
	fn     *types.Func
	method bool // a method of the task's receiver type
	ptr    bool // ... with a pointer receiver
	hasCtx bool // (fallbacks) takes a leading context.Context
}

// checker finds and checks the directives of one package.
type checker struct {
	*errs
	l     *loaded
	pkg   *types.Package
	tasks []*task
	recvs []*recvType

	register string // ArgoRegister, when the package has annotated functions
}

// check finds every //argo:retry directive of the package and checks it.
func check(l *loaded) (*checker, error) {
	c := &checker{errs: &errs{fset: l.fset}, l: l, pkg: l.pkg.Types}
	files := slices.Clone(l.pkg.Syntax)
	slices.SortFunc(files, func(a, b *ast.File) int {
		return strings.Compare(l.fset.File(a.Pos()).Name(), l.fset.File(b.Pos()).Name())
	})
	for _, f := range files {
		c.file(f)
	}
	c.crossTask()
	c.crossFlow()
	c.claimNames()
	return c, c.err()
}

// file checks the directives of one file.
func (c *checker) file(f *ast.File) {
	docOf := map[*ast.Comment]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
			for _, cm := range fd.Doc.List {
				docOf[cm] = fd
			}
		}
	}
	seen := map[*ast.FuncDecl]token.Pos{}
	for _, cg := range f.Comments {
		for _, cm := range cg.List {
			d, ok := ast.ParseDirective(cm.Slash, cm.Text)
			if !ok || d.Tool != directiveTool {
				if msg := nearMiss(cm.Text); msg != "" {
					c.warn(cm.Slash, "%s", msg)
				}
				continue
			}
			if d.Name != directiveName {
				hint := ""
				if strings.HasPrefix(strings.ToLower(d.Name), "retr") || editDistance(strings.ToLower(d.Name), directiveName) <= 2 {
					hint = ": did you mean //argo:retry?"
				}
				c.at(cm.Slash, "unknown directive //%s:%s (argogen knows //argo:retry)%s", d.Tool, d.Name, hint)
				continue
			}
			fd := docOf[cm]
			if fd == nil {
				c.at(cm.Slash, "%s", misplaced(f, c.fset, cg))
				continue
			}
			if first, dup := seen[fd]; dup {
				c.at(cm.Slash, "duplicate //argo:retry directive on %s (first at line %d)", fd.Name.Name, c.fset.Position(first).Line)
				continue
			}
			seen[fd] = cm.Slash
			s := parseDirective(c.errs, d)
			if t := c.function(fd, s); t != nil {
				c.tasks = append(c.tasks, t)
			}
		}
	}
}

// function checks an annotated declaration and returns its task, or nil
// when it cannot be a task at all.
func (c *checker) function(fd *ast.FuncDecl, s *spec) *task {
	fn, _ := c.l.pkg.TypesInfo.Defs[fd.Name].(*types.Func)
	if fn == nil {
		c.at(fd.Name.Pos(), "%s: cannot type-check this function", fd.Name.Name)
		return nil
	}
	t := &task{decl: fd, fn: fn, spec: s}
	sig := fn.Signature()
	if fd.Name.Name == "init" && fd.Recv == nil {
		c.at(fd.Name.Pos(), "init cannot be a task: it cannot be called")
		return nil
	}
	if sig.TypeParams().Len() > 0 {
		c.at(fd.Name.Pos(), "generic functions are not supported: %s has type parameters (a stored call cannot say which instantiation to run)", fd.Name.Name)
		return nil
	}
	if r := sig.Recv(); r != nil {
		rt := r.Type()
		if p, ok := rt.(*types.Pointer); ok {
			rt, t.ptrRecv = p.Elem(), true
		}
		named, _ := types.Unalias(rt).(*types.Named)
		if named == nil {
			c.at(fd.Name.Pos(), "%s: cannot type-check the receiver", fd.Name.Name)
			return nil
		}
		if named.TypeParams().Len() > 0 {
			c.at(fd.Name.Pos(), "generic functions are not supported: %s is a method of the generic type %s (a stored call cannot say which instantiation to run)", fd.Name.Name, named.Obj().Name())
			return nil
		}
		t.recv = c.recvType(named)
	}
	res := sig.Results()
	if res.Len() != 1 || !types.Identical(res.At(0).Type(), errorType) {
		c.at(fd.Name.Pos(), "%s: an //argo:retry function must return exactly error; it returns %s", t.display(), c.tupleString(res))
	}
	c.params(t, sig)
	c.name(t)
	c.fallback(t)
	c.alertAction(t)
	t.shardBy = c.keyParam(t, "shard-by", s.shardBy)
	t.uniqueBy = c.keyParam(t, "unique-by", s.uniqueBy)
	t.tenantBy = c.keyParam(t, "tenant-by", s.tenantBy)
	c.orderBy(t)
	return t
}

var errorType = types.Universe.Lookup("error").Type()

// params checks and records the stored parameters of t.
func (c *checker) params(t *task, sig *types.Signature) {
	ps := sig.Params()
	t.variadic = sig.Variadic()
	for i := range ps.Len() {
		v := ps.At(i)
		if i == 0 && isContext(v.Type()) {
			t.hasCtx = true
			continue
		}
		p := &param{name: v.Name(), index: i, typ: v.Type(), pos: v.Pos()}
		if strings.Contains(types.TypeString(v.Type(), nil), "invalid type") {
			c.at(v.Pos(), "%s: parameter %s: its type does not type-check: %s", t.display(), p.label(), c.typeErrorIn(t.decl.Type.Pos(), t.decl.Type.End()))
		} else if why := c.unstorable(v.Type()); why != "" {
			c.at(v.Pos(), "%s: parameter %s: unsupported type %s: %s", t.display(), p.label(), c.typeString(v.Type()), why)
		}
		t.params = append(t.params, p)
	}
}

// label names a parameter in messages.
func (p *param) label() string {
	if p.name == "" || p.name == "_" {
		return fmt.Sprintf("#%d", p.index+1)
	}
	return p.name
}

// name sets the task name: the directive's or "<import path>.<Func>" /
// "<import path>.<Type>.<Method>".
func (c *checker) name(t *task) {
	switch {
	case t.spec.name != "":
		t.name = t.spec.name
	case t.recv != nil:
		t.name = c.pkg.Path() + "." + t.recv.obj.Name() + "." + t.fn.Name()
	default:
		t.name = c.pkg.Path() + "." + t.fn.Name()
	}
	if len(t.name) > 255 {
		c.at(t.spec.slash, "name: the task name %q is longer than 255 bytes (column argo_task.task_id); set a shorter name=", t.name)
	}
}

// recvType returns the receiver record of named, creating it once.
func (c *checker) recvType(named *types.Named) *recvType {
	for _, r := range c.recvs {
		if r.named == named {
			return r
		}
	}
	r := &recvType{obj: named.Obj(), named: named}
	c.recvs = append(c.recvs, r)
	return r
}

// lookupHook resolves key=name for t: a method of t's receiver type first
// (for methods), then a package-level function.
func (c *checker) lookupHook(t *task, key, name string) *hook {
	pos := t.spec.pos[key]
	if t.recv != nil {
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(t.recv.named), false, c.pkg, name)
		if f, ok := obj.(*types.Func); ok {
			_, ptr := f.Signature().Recv().Type().(*types.Pointer)
			return &hook{fn: f, method: true, ptr: ptr}
		}
		if obj != nil {
			c.at(pos, "%s: %s is a field of %s, not a method", key, name, t.recv.obj.Name())
			return nil
		}
	}
	obj := c.pkg.Scope().Lookup(name)
	if obj == nil {
		where := "function " + name + " in package " + c.pkg.Name()
		if t.recv != nil {
			where = "method " + name + " of " + t.recv.obj.Name() + " and no " + where
		}
		c.at(pos, "%s: there is no %s", key, where)
		return nil
	}
	f, ok := obj.(*types.Func)
	if !ok {
		c.at(pos, "%s: %s is a %s, not a function", key, name, objKind(obj))
		return nil
	}
	if f.Signature().TypeParams().Len() > 0 {
		c.at(pos, "%s: generic functions are not supported: %s has type parameters", key, name)
		return nil
	}
	return &hook{fn: f}
}

// fallback resolves and checks fallback=NAME: same parameters as the task
// (a leading context.Context optional on either side) and an error result.
func (c *checker) fallback(t *task) {
	if t.spec.fallback == "" {
		return
	}
	h := c.lookupHook(t, "fallback", t.spec.fallback)
	if h == nil {
		return
	}
	sig := h.fn.Signature()
	ps := sig.Params()
	start := 0
	if ps.Len() > 0 && isContext(ps.At(0).Type()) {
		h.hasCtx, start = true, 1
	}
	same := ps.Len()-start == len(t.params) && sig.Variadic() == t.variadic
	for i := 0; same && i < len(t.params); i++ {
		same = types.Identical(ps.At(start+i).Type(), t.params[i].typ)
	}
	pos := t.spec.pos["fallback"]
	if !same {
		c.at(pos, "fallback: %s has parameters %s; want the parameters of %s, %s (a leading context.Context is optional)",
			h.fn.Name(), c.paramsString(ps, sig.Variadic(), 0), t.display(), c.paramsString(t.fn.Signature().Params(), t.variadic, btoi(t.hasCtx)))
		return
	}
	if r := sig.Results(); r.Len() != 1 || !types.Identical(r.At(0).Type(), errorType) {
		c.at(pos, "fallback: %s must return exactly error; it returns %s", h.fn.Name(), c.tupleString(r))
		return
	}
	t.fallback = h
}

// alertAction resolves and checks alert-action=NAME:
// func(context.Context, runtime.AlertEvent) error.
func (c *checker) alertAction(t *task) {
	if t.spec.alertAction == "" || t.spec.alert == "" {
		return
	}
	h := c.lookupHook(t, "alert-action", t.spec.alertAction)
	if h == nil {
		return
	}
	sig := h.fn.Signature()
	ps, r := sig.Params(), sig.Results()
	ok := ps.Len() == 2 && !sig.Variadic() && isContext(ps.At(0).Type()) && isNamed(ps.At(1).Type(), argotypePath, "AlertEvent") &&
		r.Len() == 1 && types.Identical(r.At(0).Type(), errorType)
	if !ok {
		c.at(t.spec.pos["alert-action"], "alert-action: %s has signature %s; want func(ctx context.Context, ev runtime.AlertEvent) error",
			h.fn.Name(), strings.TrimPrefix(c.typeString(sig), "func"))
		return
	}
	h.hasCtx = true
	t.action = h
}

// keyParam resolves shard-by=P / unique-by=P to a stored parameter.
func (c *checker) keyParam(t *task, key, name string) *param {
	if name == "" {
		return nil
	}
	pos := t.spec.pos[key]
	for _, p := range t.params {
		if p.name != name {
			continue
		}
		if _, isPtr := types.Unalias(p.typ).Underlying().(*types.Pointer); isPtr && !hasMethod(p.typ, "String") {
			c.at(pos, "%s: parameter %s is a pointer (%s): fmt.Sprint would give its address; use a value or a type with a String method", key, name, c.typeString(p.typ))
			return nil
		}
		return p
	}
	if t.hasCtx && t.fn.Signature().Params().At(0).Name() == name {
		c.at(pos, "%s: %s is the context parameter; name a stored parameter", key, name)
		return nil
	}
	var names []string
	for _, p := range t.params {
		names = append(names, p.label())
	}
	c.at(pos, "%s: %s has no parameter %s (stored parameters: %s)", key, t.display(), name, strings.Join(names, ", "))
	return nil
}

// crossTask reports duplicate task names and decides the receiver kinds.
func (c *checker) crossTask() {
	byName := map[string]*task{}
	for _, t := range c.tasks {
		if first, dup := byName[t.name]; dup {
			pos := t.spec.slash
			if p, ok := t.spec.pos["name"]; ok {
				pos = p
			}
			c.at(pos, "name: duplicate task name %s (also the name of %s at %s); set a distinct name=", t.name, first.display(), c.shortPos(first.decl.Name.Pos()))
			continue
		}
		byName[t.name] = t
		if t.recv != nil {
			r := t.recv
			r.tasks = append(r.tasks, t)
			r.ptr = r.ptr || t.ptrRecv ||
				(t.fallback != nil && t.fallback.method && t.fallback.ptr) ||
				(t.action != nil && t.action.method && t.action.ptr)
		}
	}
}

func (c *checker) shortPos(p token.Pos) string {
	pos := c.fset.Position(p)
	return fmt.Sprintf("%s:%d", baseName(pos.Filename), pos.Line)
}

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func objKind(obj types.Object) string {
	switch obj.(type) {
	case *types.Var:
		return "variable"
	case *types.Const:
		return "constant"
	case *types.TypeName:
		return "type"
	case *types.Func:
		return "function"
	}
	return "non-function"
}
